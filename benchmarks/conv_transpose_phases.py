"""Transposed convolutions: cuDNN's call against its per-phase decomposition, side by side, per suite shape.

    python3 benchmarks/conv_transpose_phases.py --out DIR [--budget-s 200] [--only 2/10,2/30]
    python3 benchmarks/conv_transpose_phases.py --cpu-smoke --out DIR      # small shapes on the CPU

Shapes: every transposed `aten.convolution` of the suite's problems (benchmarks/conv_fp32.py's PROBLEMS,
recorded on the meta device). For each shape, in the baseline's math mode (`cudnn.allow_tf32` as PyTorch
leaves it: True), each method's median time (`triton.testing.do_bench`, L2 flushed) on the operands as
Inductor hands them to cuDNN (channels-last input and weight where Inductor's layout optimization applies,
NCHW too), the call's bias left out as Inductor makes it; its ratio to cuDNN's transposed call on the same
operands; and its max error against a float64 transposed convolution (max|y - y64| / max|y64|) next to
cuDNN's own. Methods (kernels/conv_transpose_phases.py, the conv_transpose_phases generator's):
`phases` and `phases-benchmark`; plus cuDNN's call in benchmark mode (all algorithms timed).

Writes DIR/conv_transpose_phases.json and .md after every shape. Imports torch (and triton on a GPU).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
import traceback
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks import conv_fp32  # noqa: E402  (the suite's shapes and operands)
from kernelopt.kernels import conv_emulated as ce  # noqa: E402
from kernelopt.kernels.conv_transpose_phases import ConvTransposePhases  # noqa: E402
from kernelopt.kernels.cudnn_autotuned import cudnn_benchmark_scope  # noqa: E402

SMOKE = [("smoke convT2d k4 s2 p1", (2, 8, 6, 6), (8, 4, 4, 4), dict(stride=2, padding=1, transposed=True)),
         ("smoke convT3d k3 s2 p1 op1", (1, 4, 3, 4, 4), (4, 4, 3, 3, 3),
          dict(stride=2, padding=1, output_padding=1, transposed=True))]


def _methods(x, w, args) -> dict:
    st, pa, di, op, g = (list(args.stride), list(args.padding), list(args.dilation), list(args.output_padding),
                         args.groups)
    phases, tuned = ConvTransposePhases(), ConvTransposePhases(benchmark=True)

    def cudnn_benchmark():
        with cudnn_benchmark_scope():
            return torch.convolution(x, w, None, st, pa, di, True, op, g)

    return {"cudnn": lambda: torch.convolution(x, w, None, st, pa, di, True, op, g),
            "cudnn-benchmark": cudnn_benchmark,
            "phases": lambda: phases.convolution(x, w, None, st, pa, di, True, op, g),
            "phases-benchmark": lambda: tuned.convolution(x, w, None, st, pa, di, True, op, g)}


def bench_shape(c: dict, device: str, ns) -> dict:
    x, w, _, args = conv_fp32.make_operands(c, device)
    fmt = ce.channels_last_format(x.dim())
    layouts = {"NCHW": (x, w)}
    if fmt is not None:
        layouts["channels-last"] = (x.contiguous(memory_format=fmt), w.contiguous(memory_format=fmt))
    rows: dict = {}
    n = min(ns.err_images, x.shape[0])
    xe = x[:n].contiguous()
    ref = torch.convolution(xe.double(), w.double(), None, list(args.stride), list(args.padding),
                            list(args.dilation), True, list(args.output_padding), args.groups)
    errs = {name: ce.max_rel_error(fn(), ref) for name, fn in _methods(xe, w, args).items()}
    for layout, (xl, wl) in layouts.items():
        for name, fn in _methods(xl, wl, args).items():
            key = f"{name} ({layout})"
            try:
                ms = conv_fp32.time_ms(fn, device, ns.warmup_ms, ns.rep_ms)
            except Exception as exc:  # out of memory, an unsupported case: a row, not a crash
                rows[key] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
                continue
            rows[key] = {"ms": ms, "err": errs[name], "layout": layout, "method": name}
        base = rows.get(f"cudnn ({layout})", {}).get("ms")
        for name in _methods(xl, wl, args):
            r = rows.get(f"{name} ({layout})", {})
            if base and "ms" in r:
                r["vs_cudnn_call"] = base / r["ms"]
        if device == "cuda":
            torch.cuda.empty_cache()
    return rows


def markdown(results: dict) -> str:
    lines = [f"# Transposed convolutions: cuDNN's call vs per-phase forward convolutions ({results['device']})", "",
             f"{results['started']}; torch {results['torch']}; {results['cudnn']}; `cudnn.allow_tf32` = "
             f"{results['allow_tf32']} (the baseline's mode); fp32 data; bias-free calls as Inductor makes them; "
             f"errors vs float64 on {results['err_images']} image(s).", "",
             "| shape | problems | layout | method | ms | × cuDNN's call (same operands) | err vs float64 |",
             "|---|---|---|---|---|---|---|"]
    for name, rows in results["shapes"].items():
        probs = " ".join(conv_fp32.short(p) for p in results["calls"].get(name, {}).get("problems", []))
        for key, r in rows.items():
            if "error" in r:
                lines.append(f"| {name} | {probs} | | {key} | error: {r['error'][:120]} | | |")
                continue
            ratio = f"{r['vs_cudnn_call']:.3f}" if r.get("vs_cudnn_call") else ""
            lines.append(f"| {name} | {probs} | {r['layout']} | {r['method']} | {r['ms']:.4f} | {ratio} | "
                         f"{r['err']:.3g} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--cpu-smoke", action="store_true")
    ap.add_argument("--only", default=None, help="comma-separated substrings of shape names")
    ap.add_argument("--warmup-ms", type=float, default=10.0)
    ap.add_argument("--rep-ms", type=float, default=40.0)
    ap.add_argument("--err-images", type=int, default=2)
    ap.add_argument("--budget-s", type=float, default=200.0, help="start no shape after this many seconds")
    ns = ap.parse_args(argv)
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    device = "cpu" if ns.cpu_smoke else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: run with --cpu-smoke for the CPU check")
        return 2
    start = time.time()
    if ns.cpu_smoke:
        shapes = {name: dict(x=list(xs), w=list(ws), bias=False, **conv_fp32._full(kw, len(xs) - 2))
                  for name, xs, ws, kw in SMOKE}
    else:
        shapes = {k: v for k, v in conv_fp32.suite_shapes(print).items() if v["transposed"]}
    if ns.only:
        shapes = {k: v for k, v in shapes.items() if any(s in k for s in ns.only.split(","))}
    results = {"started": datetime.datetime.now().isoformat(timespec="seconds"),
               "device": torch.cuda.get_device_name() if device == "cuda" else "CPU",
               "torch": torch.__version__,
               "cudnn": f"cuDNN {torch.backends.cudnn.version()}" if device == "cuda" else "no cuDNN",
               "allow_tf32": bool(torch.backends.cudnn.allow_tf32), "err_images": ns.err_images,
               "argv": sys.argv[1:], "calls": shapes, "shapes": {}}
    status = 0
    for name, c in shapes.items():
        if time.time() - start > ns.budget_s:
            results["shapes"][name] = {"not run": {"error": "time budget"}}
            continue
        print(f"{name} ({time.time() - start:.0f} s)", flush=True)
        try:
            results["shapes"][name] = bench_shape(c, device, ns)
        except Exception:
            status = 1
            results["shapes"][name] = {"failed": {"error": traceback.format_exc()[-1200:]}}
        results["wall_s"] = time.time() - start
        (out / "conv_transpose_phases.json").write_text(json.dumps(results, indent=1))
        (out / "conv_transpose_phases.md").write_text(markdown(results))
    print(f"wall {time.time() - start:.1f} s; wrote {out / 'conv_transpose_phases.md'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
