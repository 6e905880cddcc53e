"""Inductor's Triton GEMM templates with the epilogue fused, against what its max-autotune keeps (cuBLAS and
a separate epilogue kernel), on the suite's GEMM problems: would an LLM-free "fused GEMM epilogue" generator
win anything in bf16, where `gemm_fp32` does not apply? (benchmarks/results/2026-12-03-h200-suite-bf16-part2)

Inductor's autotuner picks a GEMM by timing it alone (level2/01 in bf16 on the H200: cuBLAS 0.099 ms, its best
Triton template 0.122 ms) and fuses the epilogue into a template only when it picked one (it benchmarks that
fusion for its top Triton choice, `benchmark_epilogue_fusion`); the epilogue kernel it then launches apart
(0.059 ms there) reads and writes the GEMM's output once more. Each problem is compiled as the engine compiles
its baseline (compiled.capture.inductor_mode_options: max-autotune, no CUDA graphs), and with Inductor's own
options on top:

- `baseline`: as is;
- `triton`: `max_autotune_gemm_backends="TRITON"`: Triton GEMM templates only, the epilogue fused into them;
- `triton_tma`: the same with `triton.enable_persistent_tma_matmul` (Hopper's persistent TMA templates too).

The variants are timed side by side (core.timing.bench_interleaved: interleaved rounds of do_bench
medians, L2 flushed), each as its speedup over `baseline` with the rounds' spread; each output is compared
with eager PyTorch in the same dtype (allclose at Gate 3's tolerance for the dtype: core.tolerance), and
each compiled module's launches are counted (library calls, Triton kernels).

    python3 benchmarks/gemm_epilogue_fusion.py --out DIR --budget-s 400      # bf16, on one GPU
    python3 benchmarks/gemm_epilogue_fusion.py --dtype fp32 --tf32 --out DIR  # fp32 data, TF32 GEMMs in all
    python3 benchmarks/gemm_epilogue_fusion.py --device cpu --dtype fp32 --problems P.py --out DIR  # smoke

Writes DIR/gemm_epilogue_fusion.json and .md after every problem. A measurement to decide on a generator,
not a generator: nothing here is used by a job.
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import re
import sys
import time
import traceback
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's root, which holds the `kernelopt` package
from kernelopt.compiled.capture import inductor_mode_options  # noqa: E402
from kernelopt.core.compare import compare_close, max_abs_error  # noqa: E402
from kernelopt.core.timing import bench_interleaved  # noqa: E402
from kernelopt.core.tolerance import gate3_tolerance  # noqa: E402
from kernelopt.load.problem import build_model, dtype_from_name, import_problem, make_inputs, output_leaves  # noqa: E402

#: the suite's problems whose GPU time is mostly a GEMM and the kernels after it (bench.json library shares)
PROBLEMS = ["level2/01_linear_bias_gelu", "level2/02_linear_swish_scale", "level2/05_linear_sum",
            "level2/06_linear_layernorm_residual", "level2/08_gemm_dropout_mean_softmax",
            "level2/09_matmul_scale_residual_clamp_lse_mish", "level2/12_linear_batchnorm_gelu_mean_relu",
            "level3/01_mlp", "level3/07_mlp_mixer_block"]
VARIANTS = {
    "baseline": {},
    "triton": {"max_autotune_gemm_backends": "TRITON"},
    "triton_tma": {"max_autotune_gemm_backends": "TRITON", "triton.enable_persistent_tma_matmul": True},
}
_LIBRARY_CALL = re.compile(r"\bextern_kernels\.\w+\(")
_TRITON_LAUNCH = re.compile(r"\b(triton_\w+)\.run\(")


def launches(code: str) -> dict:
    """Library calls and Triton kernel launches in a compiled module's `call` function."""
    body = code[code.find("def call("):] if "def call(" in code else code
    kernels = _TRITON_LAUNCH.findall(body)
    return {"library_calls": len(_LIBRARY_CALL.findall(body)), "triton_launches": len(kernels),
            "templates": sorted({k for k in kernels if "_mm" in k or "tem_" in k})}


def compile_variant(model, inputs: list, options: dict):
    """(compiled model, its output, the launches of its modules) for the baseline's options plus `options`.

    No `torch._dynamo.reset()` between variants: it would drop the earlier variants' compiled code, and
    timing them afterwards would compile them again, autotuning anew (another choice, perhaps, than the one
    counted here). Dynamo guards each compiled frame on its backend, so each variant runs its own code. (Not
    torch._inductor.utils.run_and_get_code either: it resets Dynamo.)"""
    from unittest import mock

    from torch._inductor.graph import GraphLowering

    codes: list[str] = []
    compiled = torch.compile(model, options={**inductor_mode_options(), **options}, fullgraph=True, dynamic=False)
    with torch.no_grad(), mock.patch.object(GraphLowering, "save_output_code", staticmethod(codes.append)):
        out = compiled(*inputs)
    if not codes:
        raise RuntimeError("no module was compiled for this variant (another variant's compiled code ran)")
    # one graph (fullgraph): its module is saved last, after the modules autotuning lowered to benchmark
    return compiled, out, launches(codes[-1])


def compare(out, ref, dtype_name: str) -> dict:
    """Each output against eager's with the gates' own comparisons (core.compare), at Gate 3's tolerance."""
    tol = gate3_tolerance(dtype_name)
    pairs = list(zip(output_leaves(out), output_leaves(ref), strict=True))
    differ = [compare_close(g, w, tol.rtol, tol.atol, f"output {i}") for i, (g, w) in enumerate(pairs)]
    return {"max_abs_err_vs_eager": max(max_abs_error(g, w) for g, w in pairs),
            "allclose": not any(differ), "tolerance": tol.text()}


def bench_problem(path: Path, args) -> dict:
    dtype = dtype_from_name(args.dtype)
    mod = import_problem(path, module_name=f"gef_{path.stem}")
    model = build_model(mod, args.device, dtype)
    inputs = make_inputs(mod, seed=0, device=args.device, dtype=dtype)
    with torch.no_grad():
        ref = model(*inputs)
    row: dict = {"problem": path.stem, "variants": {}}
    torch._dynamo.reset()  # the previous problem's compiled code is not needed any more
    runs = {}
    for name in args.variants:
        t0 = time.perf_counter()
        try:
            compiled, out, found = compile_variant(model, inputs, VARIANTS[name])
        except Exception as exc:  # a variant Inductor cannot build here is a row, not the end of the run
            row["variants"][name] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"}
            continue
        row["variants"][name] = {"compile_s": round(time.perf_counter() - t0, 1), **found,
                                 **compare(out, ref, args.dtype)}
        runs[name] = (lambda c=compiled: c(*inputs))
    if runs:
        with torch.no_grad():
            timing = bench_interleaved(runs, rounds=args.rounds)
        for name in runs:
            row["variants"][name].update(ms=timing.median_ms[name], spread_pct=timing.noise_pct[name])
        base = row["variants"].get("baseline", {}).get("ms")
        for v in row["variants"].values():
            if base and v.get("ms"):
                v["speedup_vs_baseline"] = base / v["ms"]
        row["timer"] = timing.method
    return row


def markdown(result: dict) -> str:
    lines = [f"# Triton GEMM templates with the epilogue fused vs max-autotune's choice ({result['device']})", "",
             f"{result['when']}; torch {result['torch']}; dtype {result['dtype']}"
             + (" (TF32 GEMMs in every variant)" if result["tf32"] else "") + f"; timer {result['timer']}.", "",
             "| problem | variant | ms | spread | × baseline | library calls | Triton launches | templates "
             "| allclose vs eager | max abs err |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row in result["rows"]:
        for name, v in row["variants"].items():
            if "error" in v:
                lines.append(f"| {row['problem']} | {name} | failed: {v['error'][:120]} " + "|" * 8)
                continue
            speed = f"{v['speedup_vs_baseline']:.3f}" if v.get("speedup_vs_baseline") else ""
            ms = f"{v['ms']:.4f}" if v.get("ms") is not None else ""
            spread = f"{v['spread_pct']:.2f}%" if v.get("spread_pct") is not None else ""
            lines.append(f"| {row['problem']} | {name} | {ms} | {spread} | {speed} | {v['library_calls']} | "
                         f"{v['triton_launches']} | {', '.join(v['templates'])} | {v['allclose']} ({v['tolerance']}) "
                         f"| {v['max_abs_err_vs_eager']:.3g} |")
    if result.get("errors"):
        lines += ["", "Problems that did not run: " + "; ".join(result["errors"])]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    p.add_argument("--tf32", action="store_true", help="fp32 data: TF32 GEMMs in every variant (the tf32 policy)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--problems", nargs="*", default=None, help="problem files (default: the suite's GEMM problems)")
    p.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--budget-s", type=float, default=None,
                   help="start no problem after this many seconds (each takes 1-3 min on an H200: three "
                   "max-autotune compiles); the ones left are listed as not run")
    args = p.parse_args(argv)
    args.variants = [v for v in args.variants.split(",") if v]
    unknown = sorted(set(args.variants) - set(VARIANTS))
    if unknown or "baseline" not in args.variants:
        p.error(f"--variants must name baseline and only {', '.join(VARIANTS)} (got {unknown or args.variants})")
    if args.tf32 and args.dtype != "fp32":
        p.error("--tf32 is for fp32 data")
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    paths = [Path(x) for x in args.problems] if args.problems else \
        [ROOT / "benchmarks" / "problems" / f"{name}.py" for name in PROBLEMS]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = {"when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "device": torch.cuda.get_device_name() if args.device == "cuda" else platform.processor() or "cpu",
              "torch": torch.__version__, "dtype": args.dtype, "tf32": args.tf32, "timer": None, "rows": [],
              "errors": []}
    t0 = time.monotonic()
    for i, path in enumerate(paths):
        if args.budget_s is not None and time.monotonic() - t0 > args.budget_s:
            result["errors"].append(f"not run (--budget-s {args.budget_s:.0f} spent): "
                                    + ", ".join(q.stem for q in paths[i:]))
            break
        print(f"{path.stem} ...", flush=True)
        try:
            row = bench_problem(path, args)
        except Exception as exc:
            traceback.print_exc()
            result["errors"].append(f"{path.stem}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
        else:
            result["rows"].append(row)
            result["timer"] = row.get("timer") or result["timer"]
            for name, v in row["variants"].items():
                print(f"  {name}: {v.get('ms')} ms, x{v.get('speedup_vs_baseline')}, {v.get('error') or ''}",
                      flush=True)
        _write(out, result)
    _write(out, result)
    return 0 if result["rows"] else 1


def _write(out: Path, result: dict) -> None:
    (out / "gemm_epilogue_fusion.json").write_text(json.dumps(result, indent=1))
    (out / "gemm_epilogue_fusion.md").write_text(markdown(result))


if __name__ == "__main__":
    sys.exit(main())
