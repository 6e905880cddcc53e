"""The job's written record: report.json, report.md, trajectory.jsonl, events.jsonl."""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from kernelopt.compiled.graph import reduced_precision_reduction_mode
from kernelopt.compiled.group import CONV_OPS
from kernelopt.compiled.module_parse import op_name
from kernelopt.core.jobfiles import open_append
from kernelopt.core.outcome import Outcome
from kernelopt.core.precision import LIBRARY_MODE
from kernelopt.core.text import one_line
from kernelopt.core.tolerance import Dtype, gate2_tolerance, gate3_tolerance


def to_jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {k: to_jsonable(v) for k, v in dataclasses.asdict(obj).items()}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, float) and (obj != obj or obj in (float("inf"), float("-inf"))):
        return str(obj)
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return str(obj)


class JsonLines:
    """Append-only JSON lines file, flushed per record (a killed job keeps its trail)."""

    def __init__(self, path: Path):
        self.path = path
        self._f = open_append(path)  # created before any child runs; never through a planted link

    def write(self, record: Any) -> None:
        self._f.write(json.dumps(to_jsonable(record)) + "\n")
        self._f.flush()

    def close(self) -> None:
        self._f.close()


def write_kernel_diff(workdir: Path, name: str, original: str, accepted: str, origin: str) -> None:
    """diff_<name>.diff: a unified diff of the original kernel source and the accepted one."""
    import difflib

    diff = difflib.unified_diff(original.splitlines(True), accepted.splitlines(True),
                                f"{origin}/{name}.py", f"kernelopt/{name}.py")
    write_safely(workdir / f"diff_{name}.diff", "".join(diff))


def write_json(path: Path, data: Any) -> None:
    write_safely(path, json.dumps(to_jsonable(data), indent=1))


def write_safely(path: Path, data: str | bytes) -> None:
    """Write a file of the work directory, which sandboxed code writes too: never through what it left there.

    A link, a FIFO or a directory a submission put at `path` is replaced, not
    written through (a link to a file elsewhere, a FIFO that blocks the writer
    forever): the bytes go to a new file beside it, renamed over the name.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".write-")
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        try:
            os.replace(tmp, path)
        except IsADirectoryError:
            shutil.rmtree(path)
            os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def read_safely(path: Path, limit: int = 256 << 20) -> bytes:
    """A regular file of the work directory, not through a link or a FIFO, at most `limit` bytes."""
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            raise OSError(f"{path.name} is not a regular file of at most {limit} bytes")
        return f.read(limit)


# A fallback's 1.0 where nothing was timed is the identity of deploying the compiler's own code.
KEPT_UNTIMED = "the compiler's own code is deployed; the job ended before timing it"


def kept_untimed(result: dict) -> bool:
    """A measured result whose speedup is that identity (a graph-break fallback ends after compile): no
    time of any kind to show with it. The report and the console both say so."""
    return result.get("outcome") != "optimized" and all(
        result.get(k) is None for k in ("baseline_ms", "optimized_ms", "noise_pct"))


def speed_line(result: dict) -> str:
    """The report's one line on speed: measured numbers, or why there are none (never a made-up 1.000x)."""
    r = result
    if r.get("timing") == "not-measured" or r.get("speedup") is None:
        note = r.get("timing_note")
        return f"- Speed: not measured ({note})" if note else "- Speed: not measured"
    times = []
    if r.get("baseline_ms") is not None:
        times.append(f"baseline {r['baseline_ms']:.4f} ms")
    if r.get("optimized_ms") is not None:
        times.append(f"deployed {r['optimized_ms']:.4f} ms")
    if r.get("noise_pct") is not None:
        times.append(f"noise {r['noise_pct']:.2f}%")
    if kept_untimed(r):
        times.append(KEPT_UNTIMED)
    return f"- Speedup vs compiler baseline: **{r['speedup']:.3f}x**" + (f" ({', '.join(times)})" if times else "")


def _pct(v) -> str:
    return "" if v is None else f"{v:.0f}%"


def ncu_lines(ncu: dict | None) -> list[str]:
    """The Nsight Compute section: what ran (or why not), and each profiled kernel's figures."""
    if not ncu:
        return []
    lines = ["## Nsight Compute", "", ncu.get("note") or "", ""]
    kernels = ncu.get("kernels") or {}
    if kernels:
        lines += ["| kernel | tier | compute SOL | memory SOL | duration ms | regs | achieved occupancy | "
                  "shared mem B | top rule (est. speedup) |", "|---|---|---|---|---|---|---|---|---|"]
        for name, k in kernels.items():
            rule = (k.get("rules") or [None])[0]
            rule_text = "" if not rule else (f"{rule['name']} ({rule['speedup_pct']:.0f}%)"
                                             if rule.get("speedup_pct") is not None else rule["name"])
            dur = k.get("duration_ms")
            lines.append(f"| `{name[:60]}` | {k.get('tier', '')} | {_pct(k.get('compute_sol_pct'))} | "
                         f"{_pct(k.get('memory_sol_pct'))} | {'' if dur is None else f'{dur:.4f}'} | "
                         f"{k.get('registers') if k.get('registers') is not None else ''} | "
                         f"{_pct(k.get('achieved_occupancy_pct'))} | "
                         f"{k.get('shared_mem_bytes') if k.get('shared_mem_bytes') is not None else ''} | {rule_text} |")
        lines.append("")
    return lines


def library_math_line(capture: dict, dtype: str = Dtype.FP32.value) -> str | None:
    """What the baseline's library calls computed in, from the modes recorded at capture.

    An fp32 job's: whether cuBLAS and cuDNN ran TF32. A bf16/fp16 job's: whether cuBLAS may reduce in
    the data's precision (PyTorch's default; not below the job's data, so no reduced-precision marker).
    """
    modes = capture.get("library_math") or {}
    if not modes or capture.get("device_name") == "cpu":  # a CPU job ran no cuBLAS/cuDNN call
        return None
    if dtype in (Dtype.BF16.value, Dtype.FP16.value):
        flag = reduced_precision_reduction_mode(dtype)
        if flag not in modes:  # a capture from before the field: nothing claimed
            return None
        allowed = modes[flag]
        return (f"Baseline library math: cuBLAS {dtype} GEMMs with reduced-precision reductions "
                f"{'allowed (e.g. split-K partial sums in ' + dtype + ')' if allowed else 'disallowed'} "
                f"(`{flag}` = {allowed}{', PyTorch default' if allowed else ''}); eager, the reference of Gate 3, "
                "ran under the same modes")
    gemm = "TF32" if modes.get("cuda.matmul.allow_tf32") else "IEEE fp32"
    conv = "TF32" if modes.get("cudnn.allow_tf32") else "IEEE fp32"
    return (f"Baseline library math: cuBLAS fp32 GEMMs in {gemm} (`cuda.matmul.allow_tf32` = "
            f"{modes.get('cuda.matmul.allow_tf32')}), cuDNN fp32 convolutions in {conv} (`cudnn.allow_tf32` = "
            f"{modes.get('cudnn.allow_tf32')}{', PyTorch default' if modes.get('cudnn.allow_tf32') else ''}); "
            f"eager, the reference of Gate 3, ran under the same modes")


def _convolution_calls(report: dict) -> list[str]:
    return [t for t in (report.get("graph") or {}).get("library_calls") or [] if op_name(t) in CONV_OPS]


def convolution_math_line(report: dict) -> str | None:
    """What the model's convolutions computed in, in the baseline and in the deployed code (None for a model
    without convolutions, or one that ran none on a GPU). Under `strict` it is what makes the result's
    statement true: the baseline's cuDNN runs fp32 convolutions in TF32 by PyTorch's default, and a
    convolution KernelOPT leaves to cuDNN runs in the same mode."""
    capture = report.get("capture") or {}
    modes = capture.get("library_math") or {}
    calls = _convolution_calls(report)
    r = report["result"]
    if not calls or not modes or capture.get("device_name") == "cpu" or (r.get("dtype") or "fp32") != "fp32":
        return None
    tf32 = bool(modes.get("cudnn.allow_tf32"))
    math = "TF32" if tf32 else "IEEE fp32"
    flag = "(`cudnn.allow_tf32` = True, PyTorch default)" if tf32 else "(`cudnn.allow_tf32` = False)"
    base = f"Convolutions ({len(calls)} cuDNN call(s)): baseline in {math} {flag}"
    if r.get("outcome") != Outcome.OPTIMIZED.value:
        return base + "; deployed: the baseline's own code"
    ours = [e for e in report.get("emulation") or [] if e.get("op") in CONV_OPS]
    parts = [f"`{e['target']}` by `{e.get('method')}` ("
             + (f"in {math}, the baseline mode" if e.get("precision") == LIBRARY_MODE
                else _construction_kind(e.get("precision"))) + ")" for e in ours]
    if len(calls) > len(ours):
        parts.append(f"{len(calls) - len(ours)} left to cuDNN as the compiler called it, in {math}")
    return base + "; deployed: " + "; ".join(parts)


def baseline_convolutions_tf32(report: dict) -> bool:
    """Whether the baseline ran fp32 convolutions in TF32 (the speedup is then against a TF32 baseline)."""
    capture = report.get("capture") or {}
    return bool(_convolution_calls(report) and (capture.get("library_math") or {}).get("cudnn.allow_tf32")
                and (report["result"].get("dtype") or "fp32") == "fp32" and capture.get("device_name") != "cpu")


def nondeterminism_note(capture: dict) -> str | None:
    """The report's statement about a baseline that does not reproduce itself bit for bit, or None."""
    if capture.get("reproduction") != "within-nondeterminism":
        return None
    return (f"Baseline: the compiled model is not deterministic: seeded runs of it on the same inputs differ "
            f"by up to {capture.get('nondeterminism_max_abs_diff') or 0.0:.3g} (max |diff|; a non-deterministic "
            f"library algorithm or atomics); the re-executed module differs from the compiled run by "
            f"{capture.get('restitch_max_abs_diff') or 0.0:.3g}, within that. Gates 2-3 compare with "
            f"tolerances (Gate 3 against eager and float64), never bit for bit, so verification stands.")


def replaced_op(e: dict) -> str:
    """What a replaced group computes, in a reader's word (reports before the op was recorded: GEMM)."""
    return "convolution" if e.get("op") in CONV_OPS else "GEMM"


def _construction_kind(precision) -> str:
    if precision == "fp32-emulated":
        return "fp32 emulated on tensor cores"
    if precision == LIBRARY_MODE:
        return "the library in the caller's math mode, the baseline's"
    if precision == "fp32":
        return "IEEE fp32"
    return f"{precision} (reduced precision)"


def emulation_line(e: dict) -> str:
    """How one deployed GEMM or convolution computes: the construction, its arithmetic and Gate 3's measured ρ."""
    rho = e.get("rho")
    rho_text = "not measured" if rho is None else f"{rho:.3g}"
    kind = _construction_kind(e.get("precision"))
    method = e.get("method")
    if e.get("resolved_method") and e["resolved_method"] != method:
        method = f"{method}` (ran `{e['resolved_method']}`)"
    else:
        method = f"{method}`"
    return (f"`{e['target']}`: {replaced_op(e)} by `{method}, {kind}: {e.get('construction')}; "
            f"Gate 3 ρ (error vs float64 over the baseline's) {rho_text}, policy `{e.get('policy')}`")


def dtype_line(dtype: str) -> str:
    """The job's dtype and the tolerances it was judged by (a result means little without them)."""
    g2, g3 = gate2_tolerance(dtype), gate3_tolerance(dtype)
    return (f"- Dtype: `{dtype}` (model and inputs cast to it); Gate 2 {g2.text()}, Gate 3 {g3.text()} "
            f"({g3.source})")


def reduced_precision_where(report: dict) -> str:
    """'no', or 'yes' with where: a fallback's (or an untouched part's) reduced precision is the compiler's own
    code (e.g. cuDNN fp32 convolutions in TF32 by PyTorch's default), not something KernelOPT deployed."""
    r = report["result"]
    if not r["reduced_precision"]:
        return "no"
    baseline = report.get("baseline_reduced_precision") or []
    compilers = "yes, in the compiler's own code" + (": " + "; ".join(baseline) if baseline else "")
    deployed = report.get("deployed_reduced_precision")
    if r["outcome"] != "optimized":  # the compiler's own code is what runs
        return compilers
    if deployed is None:  # a report written before the markers were recorded
        return "yes"
    ours = report.get("replacement_reduced_precision")
    if ours is None:  # a report written before it was recorded apart
        ours = [m for m in deployed if m not in baseline]
    kept = [m for m in deployed if m not in ours]
    parts = ([f"in the replacements: {'; '.join(ours)}"] if ours else []) + (
        [f"in the compiler's own code left in place: {'; '.join(kept)}"] if kept else [])
    # none of ours or left in place: only Inductor's own reduced-precision source outside the replacements
    return "yes, " + " / ".join(parts) if parts else compilers


def helion_lines(helion: dict | None) -> list[str]:
    """A Helion kernel file's section: its kernels, the config each ran under, the one deployed."""
    if not helion:
        return []
    from kernelopt.load.helion_file import config_text

    def configs(by_kernel: dict | None, absent: str) -> str:
        return "; ".join(f"`{k}`: `{config_text(c)}`" if c else f"`{k}`: {absent}"
                         for k, c in (by_kernel or {}).items()) or absent

    lines = ["## Helion kernel", "",
             f"- Kernels: {', '.join(f'`{k}`' for k in helion.get('kernels', []))}; {helion.get('autotuning', '')}",
             f"- The file's configs: {configs(helion.get('file_configs'), 'none pinned (Helion default)')}"]
    if helion.get("best_configs"):
        lines.append(f"- Best candidate's configs: {configs(helion['best_configs'], 'Helion default')}")
    lines.append("- Deployed configs: " + (configs(helion["deployed_configs"], "Helion default")
                                            if helion.get("deployed_configs") else "the file as submitted"))
    return lines + [""]


def render_markdown(report: dict) -> str:
    r = report["result"]
    lines = [
        f"# KernelOPT report: {report['problem']['name']}",
        "",
        f"- Outcome: **{r['outcome']}** — {r['cause']}",
    ]
    lines.append(speed_line(r) + (" — against a baseline whose cuDNN convolutions ran in TF32 (PyTorch's default; "
                                  "see Convolutions below)" if r.get("speedup") is not None
                                  and baseline_convolutions_tf32(report) else ""))
    ctx = report.get("context_timings") or {}
    if ctx:
        lines.append("- For context: " + ", ".join(f"{k} {v:.4f} ms" for k, v in ctx.items()))
    lines += [
        dtype_line(r.get("dtype") or "fp32"),
        f"- Precision policy: `{r['precision']}`; deployed code computes in reduced precision: "
        + reduced_precision_where(report),
    ]
    lines += [f"- {emulation_line(e)}" for e in report.get("emulation") or []]
    for note in (library_math_line(report.get("capture") or {}, r.get("dtype") or Dtype.FP32.value),
                 convolution_math_line(report),
                 nondeterminism_note(report.get("capture") or {})):
        if note:
            lines.append(f"- {note}")
    lines += [
        "- Stage times (s): " + ", ".join(f"{k} {v:.1f}" for k, v in r.get("stage_seconds", {}).items()),
        "",
    ]
    lines += rewrite_lines(report.get("rewrite"))
    lines += variant_lines(report.get("compile_variants"))
    lines += helion_lines(report.get("helion"))
    prof = report.get("profile")
    if prof:
        lines += ["## Baseline profile", "",
                  f"End-to-end {prof['end_to_end_ms']:.4f} ms; GPU kernel time {prof['gpu_total_ms']:.4f} ms; "
                  f"library share {prof['library_share']:.1%}, Triton share {prof['triton_share']:.1%}.", "",
                  "| kernel | kind | ms/call | share | regs | spills | GB/s | of roofline |",
                  "|---|---|---|---|---|---|---|---|"]
        for k in prof["kernels"][:20]:
            gbps, frac = k.get("achieved_gbps"), k.get("roofline_fraction")
            lines.append(f"| `{k['name'][:70]}` | {k['kind']} | {k['device_ms']:.4f} | {k['share']:.1%} | "
                         f"{k['registers'] if k['registers'] is not None else ''} | "
                         f"{k['spills'] if k['spills'] is not None else ''} | "
                         f"{'' if gbps is None else f'{gbps:.0f}'} | {'' if frac is None else f'{frac:.1%}'} |")
        if prof.get("bandwidth_gbps"):
            lines.append(f"\nMemory roofline: {prof['bandwidth_gbps']:.0f} GB/s, measured on this device.")
        lines.append("")
    lines += ncu_lines(report.get("ncu"))
    if report.get("targets"):
        lines += ["## Kernels", "", "| kernel | kind | share | searched | reason |", "|---|---|---|---|---|"]
        for d in report["targets"]:
            lines.append(f"| `{d['name']}` | {d['kind']} | {d['share']:.1%} | {d['searched']} | {d.get('reason') or ''} |")
        lines.append("")
    if report.get("search"):
        lines += ["## Search", ""]
        for s in report["search"]:
            best = s.get("best_kernel_speedup")
            lines.append(f"- `{s['target']}`: {s['attempts']} candidates, {s['passed']} passed gates 1-2; "
                         + (f"best kernel speedup {best:.3f}x" if best is not None else "no kernel speedup measured")
                         + f"; stopped: {s.get('stopped_reason') or 'search finished'}")
        lines.append("")
    lines += agents_lines(report.get("agents"), report.get("llm"))
    if report.get("waterfall"):
        lines += ["## Waterfall (Gates 3-4 on the whole model)", ""]
        for step in report["waterfall"]:
            lines.append(f"- {step}")
        lines.append("")
    return "\n".join(lines) + "\n"


def rewrite_lines(rewrite: dict | None) -> list[str]:
    """The rewrite stage: each identity applied, where, the graph's FLOPs and bytes before and after, what
    the identities proved about the model, and what the gates said of the rewritten graph."""
    if not rewrite:
        return []
    lines = ["## Graph rewrites", "", rewrite.get("note") or ""]
    for finding in rewrite.get("findings") or []:
        lines.append(f"- **Finding**: {finding}")
    if rewrite.get("applied"):
        lines += ["", "| identity | where | matmul/conv GFLOP before → after | MB materialized before fusion, before → after |", "|---|---|---|---|"]
        for a in rewrite["applied"]:
            lines.append(f"| {a['identity']} | {a['where']} | {a['flops_before'] / 1e9:.4g} → {a['flops_after'] / 1e9:.4g} "
                         f"| {a['bytes_before'] / 1e6:.1f} → {a['bytes_after'] / 1e6:.1f} |")
    if rewrite.get("verdict"):
        lines += ["", f"Rewritten graph: {rewrite['verdict']}"]
    return lines + [""]


def variant_lines(rows: list[dict] | None) -> list[str]:
    """The compile-variant stage: each variant tried, its Inductor options, compile time and what the gates
    (or the budget) said of it."""
    if not rows:
        return []
    lines = ["## Compile variants", "", "The model compiled again by Inductor with one option changed, each a "
             "whole-model candidate through Gates 2-4.", "",
             "| variant | Inductor options | compile s | verdict |", "|---|---|---|---|"]
    for r in rows:
        opts = ", ".join(f"`{k}={v!r}`" for k, v in (r.get("options") or {}).items())
        compiled = f"{r['compile_seconds']:.1f}" if r.get("compile_seconds") is not None else "-"
        lines.append(f"| {r['variant']} | {opts} | {compiled} | {one_line(r.get('verdict') or '').replace('|', '/')} |")
    return lines + [""]


def agents_lines(agents: dict | None, llm) -> list[str]:
    """The LLM agents' part of report.md: usage, plans per strategy, chains stopped, the AVOID list given."""
    if not agents and not llm:
        return []
    lines = ["## Agents", ""]
    for usage in (llm if isinstance(llm, list) else [llm] if llm else []):
        lines.append(f"- LLM `{usage.get('model')}`: {usage.get('calls', 0)} calls "
                     f"({usage.get('failed_calls', 0)} failed), {usage.get('prompt_tokens', 0)} prompt + "
                     f"{usage.get('completion_tokens', 0)} completion tokens"
                     + (f", cost {usage['cost']:.4f}" if usage.get("cost") is not None else ""))
    agents = agents or {}
    for o in agents.get("strategy_outcomes") or []:
        lines.append(f"- strategy `{o['strategy']}`: {o['successes']} of {o['attempts']} plans succeeded")
    for stop in agents.get("stopped_chains") or []:
        lines.append(f"- `{stop['target']}` chain {stop['chain']} ({stop['generator']}) stopped: {stop['reason']} "
                     f"after {stop['consecutive_failures']} failures in a row")
    if agents.get("avoid"):
        lines.append("- AVOID list given to the planner: " + ", ".join(
            f"`{a['strategy']}` ({a.get('successes', 0)}/{a.get('attempts', 0)})" for a in agents["avoid"]))
    if agents.get("experience_items"):
        lines.append(f"- {agents['experience_items']} experience items in experience.jsonl")
    return lines + [""]
