"""Where the time of a convolution model goes, and which of Inductor's own choices around the cuDNN call cost
it: the suite's convolution problems compiled as the engine compiles its baseline (max-autotune, no CUDA
graphs) and with Inductor's options changed, timed side by side (issue 27, item 2: what a convolution +
epilogue generator could win, measured before it is built).

- `baseline`: as the engine's capture compiles it;
- `no_layout_opt`: `layout_optimization=False`: cuDNN gets the model's NCHW tensors, no channels-last copies
  of the input and weight before the call (Inductor's layout optimization adds them);
- `no_persistent`: `triton.persistent_reductions=False`: looped reductions instead of whole-row ones;
- `cudnn_ieee`: the baseline's compiled code with `torch.backends.cudnn.allow_tf32 = False` while it runs:
  what the same model costs with fp32-accurate (IEEE) cuDNN convolutions, against the TF32 the baseline
  runs by PyTorch's default;
- `cudnn_benchmark`: the baseline's compiled code with `torch.backends.cudnn.benchmark = True` while it runs:
  cuDNN times its algorithms for each convolution once and keeps the fastest, instead of its heuristic's
  pick (PyTorch's default); the math mode (TF32) is the baseline's;
- `no_layout_opt_benchmark`: `no_layout_opt` run with cuDNN's benchmark mode;
- `triton_conv`: `max_autotune_conv_backends="TRITON"`: Inductor's own Triton convolution templates (2-D and 3-D),
  which Inductor can fuse the epilogue into; max-autotune times them against cuDNN on the convolution alone,
  without the epilogue they would absorb, and keeps cuDNN: this asks what the fused template costs on the whole
  model. Inductor states the templates' dot in IEEE fp32 unless `cudnn.fp32_precision` is "tf32" (PyTorch leaves
  it "none" while cuDNN's convolutions run TF32), so this variant's templates are IEEE;
- `triton_conv_no_layout`: `triton_conv` on the model's NCHW tensors (`layout_optimization=False`);
- `tf32_conv_templates` / `fused_conv_templates`: the engine's compile variants (compiled/variants.py): compiled
  with `cudnn.fp32_precision = "tf32"`, so the templates compute in the TF32 cuDNN's calls run in; the first with
  Inductor's backends as the baseline's (its autotune on equal math), the second with `triton_conv`'s.

Each output is compared with eager PyTorch (Gate 3's tolerance) and its error against a float64 eager run is
given (`err64`: max |out - out64| / max |out64|), so a variant's speed is read with its accuracy.

    python3 benchmarks/conv_inductor_variants.py --out DIR --budget-s 400

Writes DIR/conv_inductor_variants.json and .md after every problem. A measurement, not a generator.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import sys
import time
import traceback
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.gemm_epilogue_fusion import compare, compile_variant  # noqa: E402
from kernelopt.compiled.variants import VARIANTS as ENGINE_VARIANTS  # noqa: E402
from kernelopt.compiled.variants import conv_templates_tf32  # noqa: E402
from kernelopt.core.timing import bench_interleaved  # noqa: E402
from kernelopt.load.problem import build_model, import_problem, make_inputs, output_leaves  # noqa: E402

PROBLEMS = ["level2/03_conv_bn_relu", "level2/04_conv_groupnorm_mean", "level2/07_conv_softmax_maxpool",
            "level2/10_convtranspose_bias_tanh_center", "level2/11_conv_scale_min", "level3/02_cnn_block",
            "level3/03_resnet_basic_block", "level3/08_squeeze_excitation_block",
            "level1/23_conv_transpose2d_grouped_dilated", "level2/13_conv_instancenorm_gelu",
            "level2/14_conv3d_maxpool_silu", "level2/15_convtranspose_batchnorm_relu",
            "level2/16_convtranspose3d_bias_hardswish_clamp_gelu", "level2/17_conv_logsumexp",
            "level2/18_conv_grouped_subtract_mish_scale", "level3/10_resnet_basic_block_stack",
            "level3/11_depthwise_separable_block"]
#: variant -> (Inductor options on top of the baseline's, cuDNN TF32 while it runs, cuDNN benchmark mode)
VARIANTS = {
    "baseline": ({}, True, False),
    "no_layout_opt": ({"layout_optimization": False}, True, False),
    "no_persistent": ({"triton.persistent_reductions": False}, True, False),
    "cudnn_ieee": (None, False, False),  # None: the baseline's compiled code
    "cudnn_benchmark": (None, True, True),
    "no_layout_opt_benchmark": ("no_layout_opt", True, True),  # a name: that variant's compiled code
    "triton_conv": ({"max_autotune_conv_backends": "TRITON"}, True, False),
    "triton_conv_no_layout": ({"max_autotune_conv_backends": "TRITON", "layout_optimization": False}, True, False),
    # the engine's own template variants, as it compiles them
    **{v.name: (dict(v.options), True, False) for v in ENGINE_VARIANTS if v.tf32_conv_templates},
}
#: the variants compiled with Inductor's convolution templates in TF32 (compiled.variants.conv_templates_tf32)
TF32_TEMPLATES = {v.name for v in ENGINE_VARIANTS if v.tf32_conv_templates}


@contextlib.contextmanager
def cudnn_tf32(on: bool, benchmark: bool = False):
    before = torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark
    torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark = on, benchmark
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark = before


def err64(out, ref64) -> float:
    worst = 0.0
    for o, r in zip(output_leaves(out), output_leaves(ref64), strict=True):
        if not torch.is_floating_point(o):
            continue
        scale = float(r.abs().max()) or 1.0
        worst = max(worst, float((o.double() - r).abs().max()) / scale)
    return worst


def bench_problem(path: Path, args) -> dict:
    mod = import_problem(path, module_name=f"civ_{path.stem}")
    model = build_model(mod, "cuda", torch.float32)
    inputs = make_inputs(mod, seed=0, device="cuda", dtype=torch.float32)
    import copy
    model64 = copy.deepcopy(model).double()
    with torch.no_grad():
        ref = model(*inputs)
        ref64 = model64(*[x.double() if torch.is_floating_point(x) else x for x in inputs])
    del model64
    row: dict = {"problem": path.stem, "variants": {}}
    torch._dynamo.reset()
    runs, compiled_by = {}, {}
    for name in args.variants:
        options, tf32, benchmark = VARIANTS[name]
        t0 = time.perf_counter()
        try:
            if options is None or isinstance(options, str):
                compiled = compiled_by[options or "baseline"]
                with torch.no_grad(), cudnn_tf32(tf32, benchmark):
                    out = compiled(*inputs)
                found = {}
            else:
                with cudnn_tf32(tf32), conv_templates_tf32(name in TF32_TEMPLATES):
                    compiled, out, found = compile_variant(model, inputs, options)
                compiled_by[name] = compiled
        except Exception as exc:
            row["variants"][name] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"}
            continue
        row["variants"][name] = {"compile_s": round(time.perf_counter() - t0, 1), **found,
                                 **compare(out, ref, "fp32"), "err64": err64(out, ref64),
                                 "cudnn_tf32": tf32, "cudnn_benchmark": benchmark}

        def run(c=compiled, tf32=tf32, benchmark=benchmark):
            with cudnn_tf32(tf32, benchmark):
                return c(*inputs)
        runs[name] = run
    row["eager_err64"] = err64(ref, ref64)
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
    lines = [f"# Inductor's choices around cuDNN convolutions ({result['device']})", "",
             f"{result['when']}; torch {result['torch']}; fp32 data; timer {result['timer']}.", "",
             "| problem | variant | cuDNN TF32 | cuDNN benchmark | ms | spread | × baseline | Triton launches | allclose vs eager "
             "| err vs float64 |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row in result["rows"]:
        for name, v in row["variants"].items():
            if "error" in v:
                lines.append(f"| {row['problem']} | {name} | failed: {v['error'][:120]} " + "|" * 7)
                continue
            speed = f"{v['speedup_vs_baseline']:.3f}" if v.get("speedup_vs_baseline") else ""
            ms = f"{v['ms']:.4f}" if v.get("ms") is not None else ""
            spread = f"{v['spread_pct']:.2f}%" if v.get("spread_pct") is not None else ""
            lines.append(f"| {row['problem']} | {name} | {v['cudnn_tf32']} | {v.get('cudnn_benchmark', False)} | {ms} | {spread} | {speed} | "
                         f"{v.get('triton_launches', '(baseline code)')} | {v['allclose']} | {v['err64']:.3g} |")
        lines.append(f"| {row['problem']} | eager (TF32 per PyTorch's default) | | | | | | | | {row['eager_err64']:.3g} |")
    if result.get("errors"):
        lines += ["", "Problems that did not run: " + "; ".join(result["errors"])]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--problems", nargs="*", default=None)
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--budget-s", type=float, default=None)
    args = p.parse_args(argv)
    args.variants = [v for v in args.variants.split(",") if v]
    if "baseline" not in args.variants or set(args.variants) - set(VARIANTS):
        p.error(f"--variants must name baseline and only {', '.join(VARIANTS)}")
    for v in args.variants:
        base = VARIANTS[v][0]
        if isinstance(base, str) and base not in args.variants[:args.variants.index(v)]:
            p.error(f"--variants: {v} runs {base}'s compiled code: name {base} before it")
    paths = [Path(x) for x in args.problems] if args.problems else \
        [ROOT / "benchmarks" / "problems" / f"{name}.py" for name in PROBLEMS]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = {"when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "device": torch.cuda.get_device_name(), "torch": torch.__version__, "timer": None, "rows": [],
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
                print(f"  {name}: {v.get('ms')} ms, x{v.get('speedup_vs_baseline')}, err64 {v.get('err64')} "
                      f"{v.get('error') or ''}", flush=True)
        _write(out, result)
    _write(out, result)  # the problems --budget-s left, listed
    return 0 if result["rows"] else 1


def _write(out: Path, result: dict) -> None:
    (out / "conv_inductor_variants.json").write_text(json.dumps(result, indent=1))
    (out / "conv_inductor_variants.md").write_text(markdown(result))


if __name__ == "__main__":
    sys.exit(main())
