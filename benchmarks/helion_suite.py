"""Helion kernel files (issue 38): the job's time-to-result, and its deployed config against Helion's default config
and Helion's own autotune, timed side by side.

    python3 benchmarks/helion_suite.py --out DIR [--job-s 300] [--autotune-s 900] [--autotune-effort full]
                                             [--only add,softmax] [--work DIR]
    # on a lent GPU (benchmarks/device_carry.sh first): run(carry=[".gpu-in", ".gpu-helion"],
    #   command="source .gpu-in/setup.sh; python3 benchmarks/helion_suite.py --out $OUT/helion --job-s 120 --autotune-s 300")

For each file of benchmarks/kernels/helion/ (GPU only):
1. a KernelOPT job (`helion_config` alone, `--job-s` budget; `tf32` for the files whose `hl.dot`/`addmm`
   runs TF32 tensor cores, `strict` otherwise): wall time to its outcome, outcome, cause, the config it deployed
   (none when it kept the submission: its best candidate is then timed beside it, labelled as such);
2. Helion's own autotuner on the same kernel and inputs, in a child process of its own bounded by
   `--autotune-s` (`HELION_AUTOTUNE_EFFORT` = `--autotune-effort`: `full`, or `quick` where the device time
   cannot hold a full one: the table names the effort): its wall time and the config it chose, or that it
   did not finish in time;
3. in one process, each kernel under Helion's default config, the job's config and the autotuner's, timed
   interleaved (`triton.testing.do_bench`, medians of 5 rounds), and each one's ratio to the default.

Writes DIR/helion_suite.json and .md after every file. The precision of each row is stated with it.

A full autotune takes minutes a kernel, more than a device call can hold next to the jobs, so the parts can run
in calls of their own and meet in a later one:

    python3 benchmarks/helion_suite.py --out A --only matmul --skip-job --autotune-s 540     # the autotune alone
    python3 benchmarks/helion_suite.py --out B --only matmul --reuse A/helion_suite.json      # the job, then all timed

Or within one call, at the wall time the job took: `--autotune-budget-s job` gives Helion's full-effort search
each kernel's job time to result as its own budget (HELION_AUTOTUNE_BUDGET_SECONDS; past it the search returns its
best config so far, and the table says it was cut), a number gives every kernel that budget:

    python3 benchmarks/helion_suite.py --out C --autotune-budget-s job --autotune-s 300

`--reuse` takes a part from an earlier run's row of the same file on a GPU of the same name: the job's deployed
configs, and a finished autotune of the same effort (the row says it was reused, and from where). The side-by-side
timing always runs in this call: ratios are only ever taken within one process.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
KERNELS = ROOT / "benchmarks" / "kernels" / "helion"
# hl.dot / torch.addmm of fp32 tiles lowers to tl.dot, TF32 tensor cores by Helion's default dot precision
TF32_FILES = {"matmul", "gemm_bias_relu", "attention"}

_AUTOTUNE = r"""
import importlib.util, json, os, sys, time, torch
spec = importlib.util.spec_from_file_location("helion_file", sys.argv[1])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
from helion.runtime.kernel import Kernel
kernels = {n: k for n, k in vars(mod).items() if isinstance(k, Kernel)}
torch.manual_seed(0)
xs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in mod.get_inputs()]
called = {}
real = Kernel.__call__
def rec(self, *a, **k):
    called.setdefault(self.name, (self, a))
    return real(self, *a, **k)
Kernel.__call__ = rec
t0 = time.monotonic()
mod.launch(*xs)  # autotunes each kernel on first call (HELION_AUTOTUNE_EFFORT)
wall = time.monotonic() - t0
print(json.dumps({"wall_s": wall, "configs": {n: dict(k.bind(tuple(a))._config.config) for n, (k, a) in called.items()}}))
"""


def run_job(path: Path, out: Path, budget_s: float) -> dict:
    from kernelopt.pipeline.job import run_job as job
    from kernelopt.pipeline.options import JobOptions

    precision = "tf32" if path.stem in TF32_FILES else "strict"
    t0 = time.monotonic()
    result = job(str(path), out, JobOptions(generators=["helion_config"], time_budget_s=budget_s, precision=precision))
    wall = time.monotonic() - t0
    report = json.loads((out / "report.json").read_text())
    helion = report.get("helion", {})
    # "configs": what the job deployed (None: it kept the submission, Helion's default); "best_configs": its best
    # candidate, timed beside them as such when it was not deployed
    return {"precision": precision, "wall_s": round(wall, 1), "outcome": str(result.outcome), "cause": result.cause,
            "speedup": result.speedup, "configs": helion.get("deployed_configs") or None,
            "best_configs": helion.get("best_configs") or None}


def run_autotune(path: Path, limit_s: float, effort: str = "full", budget_s: float | None = None) -> dict:
    """Helion's own autotune of the file's kernels, killed at `limit_s`; with `budget_s`, Helion's own wall-clock
    budget (HELION_AUTOTUNE_BUDGET_SECONDS: past it the search returns its best config so far)."""
    env = {**os.environ, "HELION_AUTOTUNE_EFFORT": effort}
    if budget_s is not None:
        env["HELION_AUTOTUNE_BUDGET_SECONDS"] = str(max(1, round(budget_s)))
    # its own session: a timed-out autotune's precompile workers go with it, not on timing the next row
    proc = subprocess.Popen([sys.executable, "-c", _AUTOTUNE, str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"finished": False, "effort": effort, "budget_s": budget_s,
                "note": f"Helion's {effort} autotune did not finish in {limit_s:.0f} s"}
    line = next((ln for ln in reversed(stdout.splitlines()) if ln.startswith("{")), None)
    if proc.returncode or line is None:
        return {"finished": False, "effort": effort, "budget_s": budget_s,
                "note": f"autotune exited {proc.returncode}: {stderr.strip()[-300:]}"}
    return {"finished": True, "effort": effort, "budget_s": budget_s, "cut_by_budget": cut_by_budget(stderr),
            **json.loads(line)}


def cut_by_budget(log: str) -> bool:
    """Whether Helion's autotune log says its wall-clock budget ended the search (it then returns its best so far)."""
    return any("Autotune budget" in ln and "exceeded" in ln for ln in log.splitlines())


def reusable(earlier: list[dict], file: str, device: str, part: str, effort: str,
             budget_s: float | None = None) -> dict | None:
    """An earlier run's `part` ("job" or "autotune") of `file`, where it ran on a GPU of the name `device` and
    finished (a job that reached an outcome; an autotune of `effort` and of Helion budget `budget_s` that
    finished); else None."""
    for row in earlier:
        if row.get("file") != file or row.get("device") != device or not isinstance(row.get(part), dict):
            continue
        got = row[part]
        if part == "job" and got.get("outcome") not in (None, "not run", "raised"):
            if got.get("outcome") != "optimized" and "best_configs" not in got:
                # a row written before 2026-12-07's fix listed a kept submission's best candidate as its configs
                got = {**got, "configs": None, "best_configs": got.get("configs")}
            return got
        if (part == "autotune" and got.get("finished") and got.get("effort") == effort and got.get("configs")
                and got.get("budget_s") == budget_s):
            return got
    return None


def time_side_by_side(path: Path, configs: dict[str, dict | None]) -> dict:
    """Median ms of the file's launch under each named set of pinned configs (None: Helion's default)."""
    import torch
    import triton.testing

    from kernelopt.load.helion_file import pin_configs
    from kernelopt.load.problem import import_problem

    os.environ["HELION_AUTOTUNE_EFFORT"] = "none"
    source = path.read_text()
    mods = {}
    for label, pinned in configs.items():
        variant = Path(f"/tmp/helion_suite_{path.stem}_{label}.py")
        variant.write_text(pin_configs(source, pinned) if pinned else source)
        mods[label] = import_problem(variant, module_name=f"helion_suite_{path.stem}_{label}")
    torch.manual_seed(0)
    xs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in next(iter(mods.values())).get_inputs()]
    for m in mods.values():
        m.launch(*xs)  # compile
    rounds: dict[str, list[float]] = {label: [] for label in mods}
    for _ in range(5):
        for label, m in mods.items():
            rounds[label].append(triton.testing.do_bench(lambda m=m: m.launch(*xs), warmup=25, rep=100))
    return {label: round(statistics.median(ts), 4) for label, ts in rounds.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--job-s", type=float, default=300.0)
    parser.add_argument("--autotune-s", type=float, default=900.0)
    parser.add_argument("--autotune-effort", choices=("full", "quick"), default="full")
    parser.add_argument("--autotune-budget-s", default=None, metavar="SECONDS|job",
                        help="Helion's own autotune budget (it returns its best config so far when spent); 'job': "
                             "each kernel's job time to result, so both searches get the same wall time")
    parser.add_argument("--only", default="")
    parser.add_argument("--reuse", type=Path, default=None, metavar="HELION_SUITE_JSON",
                        help="take each file's finished job and autotune from this earlier run (same GPU name)")
    parser.add_argument("--skip-job", action="store_true", help="no KernelOPT job (default and autotune timed)")
    parser.add_argument("--skip-autotune", action="store_true", help="no Helion autotune (default and job timed)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/helion_suite"),
                        help="the jobs' directories (the device tool returns few files: pack what you keep)")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("helion_suite: needs a CUDA GPU (speed is what it measures)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    only = {s for s in args.only.split(",") if s}
    earlier = json.loads(args.reuse.read_text()) if args.reuse else []
    device = torch.cuda.get_device_name(0)
    rows = []
    for path in sorted(KERNELS.glob("*.py")):
        if only and path.stem not in only:
            continue
        row: dict = {"file": path.name, "device": device}
        job = reusable(earlier, path.name, device, "job", args.autotune_effort)
        if job is not None:
            row["job"] = {**job, "reused_from": str(args.reuse)}
        elif args.skip_job:
            row["job"] = {"precision": "-", "wall_s": 0.0, "outcome": "not run", "configs": None, "cause": "--skip-job"}
        else:
            try:
                row["job"] = run_job(path, args.work / path.stem, args.job_s)
            except Exception as exc:  # noqa: BLE001 - a job that raised is a finding of its own; the next file runs
                row["job"] = {"precision": "-", "wall_s": 0.0, "outcome": "raised", "configs": None,
                              "cause": f"{type(exc).__name__}: {str(exc)[:300]}"}
        budget_s = autotune_budget(args.autotune_budget_s, row["job"])
        tuned = reusable(earlier, path.name, device, "autotune", args.autotune_effort, budget_s)
        if tuned is not None:
            row["autotune"] = {**tuned, "reused_from": str(args.reuse)}
        elif args.skip_autotune:
            row["autotune"] = {"finished": False, "effort": args.autotune_effort, "note": "not run (--skip-autotune)"}
        else:
            row["autotune"] = run_autotune(path, args.autotune_s, args.autotune_effort, budget_s)
        configs: dict[str, dict | None] = {"default": None}
        if row["job"]["configs"]:
            configs["job"] = row["job"]["configs"]
        elif row["job"].get("best_configs"):
            configs["best candidate"] = row["job"]["best_configs"]
        if row["autotune"].get("finished"):
            configs["autotune"] = row["autotune"]["configs"]
        try:
            row["ms"] = time_side_by_side(path, configs)
            row["vs_default"] = {k: round(row["ms"]["default"] / v, 3) for k, v in row["ms"].items()}
        except Exception as exc:  # noqa: BLE001 - the row says what failed; the next file still runs
            row["timing_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        rows.append(row)
        (args.out / "helion_suite.json").write_text(json.dumps(rows, indent=1))
        (args.out / "helion_suite.md").write_text(_markdown(rows))
        print(json.dumps(row), flush=True)
    return 0


def autotune_budget(option: str | None, job: dict) -> float | None:
    """`--autotune-budget-s` for one kernel: None (no budget), a number of seconds, or "job" (the job's time to
    result; none where the job did not run)."""
    if option is None:
        return None
    if option == "job":
        wall = job.get("wall_s") or 0.0
        return float(wall) if wall > 0 else None
    return float(option)


def _autotune_cell(tuned: dict) -> str:
    effort, budget = tuned.get("effort", "full"), tuned.get("budget_s")
    if not tuned.get("finished"):
        return tuned["note"]
    cell = f"{effort}: {tuned['wall_s']:.0f} s"
    if budget is not None:
        cell += (f", cut by its {budget:.0f} s budget (best so far)" if tuned.get("cut_by_budget")
                 else f", within its {budget:.0f} s budget")
    return cell


def _markdown(rows: list[dict]) -> str:
    lines = ["| file | precision | job: outcome, time to result | autotune: time | ms default / job / autotune "
             "| job vs default | autotune vs default |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        ms, vs = r.get("ms", {}), r.get("vs_default", {})
        tune = _autotune_cell(r["autotune"])
        if r["autotune"].get("reused_from"):
            tune += f" (an earlier call's: {r['autotune']['reused_from']})"
        job = f"{r['job']['outcome']}, {r['job']['wall_s']:.0f} s" + (" (an earlier call's)" if r["job"].get("reused_from")
                                                                      else "")
        job_ms, job_vs = ms.get("job", "-"), f"{vs.get('job', '-')}x"
        if "best candidate" in ms:  # nothing deployed: the job handed back the submission, Helion's default
            job_ms, job_vs = "= default", f"1.0x (kept; best candidate {ms['best candidate']} ms, {vs['best candidate']}x)"
        lines.append(f"| {r['file']} | {r['job']['precision']} | {job} "
                     f"| {tune} | {ms.get('default')} / {job_ms} / {ms.get('autotune', '-')} "
                     f"| {job_vs} | {vs.get('autotune', '-')}x |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
