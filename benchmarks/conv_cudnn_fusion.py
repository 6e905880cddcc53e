"""cuDNN's fused convolution + pointwise epilogue against Inductor's code for the same region (issue 35, item 3a).

    python -m benchmarks.conv_cudnn_fusion benchmarks/problems/level2/*conv*.py \
        benchmarks/problems/level3/17_efficientnet_b0.py --out runs/cudnn-fusion [--budget-s 400] [--dtype bf16]

For every problem, the ATen graph the capture hands Inductor is read (its transform hook stops the capture
before anything compiles), and each convolution's pointwise region (rewrite/conv_regions.py) is timed, once
per distinct description and shape, side by side in one process (do_bench medians, 5 interleaved rounds):

- `inductor`: the region alone, `torch.compile`d in the baseline's mode (max-autotune-no-cudagraphs) from its
  reference (rewrite/conv_epilogue.py) on the input in the model's own NCHW layout: the convolution call and
  Inductor's epilogue kernel, with whatever layout copies Inductor adds — what the baseline runs for it;
- `cudnn nchw->nchw`, `cudnn cl->cl`, `cudnn cl->nchw`: the whole region as one cuDNN frontend graph
  (`CudnnConvEpilogue`), input and output in NCHW or channels-last; a graph cuDNN refuses is a row with its
  reason. `cl->cl` is what a network kept channels-last end to end would pay; the others include no layout
  copy, which a single-convolution model would add.

`err64` is max |out − out64| / max |out64| against the reference in float64; the baseline's own is printed beside
it. The convolutions compute in the caller's math mode (PyTorch's default: cuDNN TF32). Regions of a model that
cuDNN cannot hold (a BatchNorm in training mode reads the convolution's output twice) are counted, with why.
`--dtype bf16` runs both sides on bf16 data: what a job under the `bf16` policy compiles, and what cuDNN's fused
engines are built for (on an H100 no engine took `genstats` on fp32 data, and the fused fp32 regions ran at
0.39-0.50x: benchmarks/results/2026-12-07-h100-cudnn-helion-resnet). Writes `<out>/cudnn_fusion.json` and
`<out>/cudnn_fusion.md`. Needs a GPU and `nvidia-cudnn-frontend` (benchmarks/device_carry.sh carries the wheel).
"""
from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
import traceback
from pathlib import Path

import torch

from kernelopt.compiled.capture import CaptureRequest, TransformStopped, capture_model, inductor_mode_options
from kernelopt.core.timing import bench_interleaved
from kernelopt.kernels.cudnn_fused import (
    CudnnConvEpilogue,
    CudnnConvGenstats,
    NotSupportedByCudnn,
    bn_apply,
    channels_last,
)
from kernelopt.rewrite.conv_epilogue import ConvEpilogue, reference
from kernelopt.rewrite.conv_regions import ConvRegion, conv_regions
from kernelopt.rewrite.fx import aten, val

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
LAYOUTS = {"cudnn nchw->nchw": ("contiguous", "contiguous"), "cudnn cl->cl": ("channels_last", "channels_last"),
           "cudnn cl->nchw": ("channels_last", "contiguous")}


def graph_regions(problem: Path, device: str = "cuda") -> tuple[list[tuple[ConvRegion, dict]], list[dict]]:
    """The problem's regions, each with the shapes of its convolution's operands and its external tensors; and
    its convolutions whose output a training-mode BatchNorm normalizes (`var_mean` over every dim but 1)."""
    found: dict = {}

    def stop(gm) -> None:
        nodes = {n.name: n for n in gm.graph.nodes}
        found["regions"] = []
        for r in conv_regions(gm):
            conv = nodes[r.conv]
            shapes = {"x": list(val(conv.args[0]).shape), "w": list(val(conv.args[1]).shape),
                      "operands": [list(val(nodes[o]).shape) for o in r.operand_nodes]}
            found["regions"].append((r, shapes))
        found["bn"] = [bn for n in gm.graph.nodes if (bn := _bn_conv(n)) is not None]
        raise TransformStopped(None)

    with tempfile.TemporaryDirectory() as tmp:
        try:
            capture_model(CaptureRequest(str(problem), tmp, "fp32", device, context_timing=False), transform=stop)
        except TransformStopped:
            pass
    return found.get("regions", []), found.get("bn", [])


def _bn_conv(n) -> dict | None:
    """A forward convolution read by a training-mode BatchNorm's statistics: its shapes and parameters."""
    if n.op != "call_function" or n.target is not aten.convolution.default or val(n) is None:
        return None
    x, w, bias, stride, padding, dilation, transposed, _, groups = n.args
    rank = val(n).dim()
    stats = [u for u in n.users if u.target is aten.var_mean.correction
             and sorted(u.args[1]) == [0] + list(range(2, rank)) and u.kwargs.get("correction") == 0]
    if transposed or not stats:
        return None
    return {"x": list(val(x).shape), "w": list(val(w).shape), "stride": list(stride), "padding": list(padding),
            "dilation": list(dilation), "groups": int(groups), "conv_bias": bias is not None}


def time_bn(c: dict, device: str = "cuda", eps: float = 1e-5, dtype: torch.dtype = torch.float32) -> dict:
    """conv → BatchNorm (training mode) → ReLU at one convolution's shapes, channels-last as a network runs it:

    - `inductor`: the three compiled together from the activation (the baseline's kernels for one layer);
    - `cudnn genstats + apply`: cuDNN's conv → genstats graph, then the normalization and ReLU compiled;
    - `cudnn bn-relu prologue + genstats + finalize`: the same layer as a network chain would run it — the
      previous layer's BatchNorm and ReLU applied as the convolution reads that layer's raw output (per-channel
      scale and bias, computed from its statistics by a small compiled finalize), this layer's statistics
      out. It reads the previous raw output, not the activation: the activation is never written.
    """
    g = torch.Generator(device="cpu").manual_seed(0)
    cl = _layout
    x_raw64 = torch.randn(c["x"], generator=g, dtype=torch.float64) * 2 + 0.5  # the previous layer's raw output
    w64 = torch.randn(c["w"], generator=g, dtype=torch.float64) / math.prod(c["w"][1:]) ** 0.5
    k = c["w"][0]
    gamma64 = 1 + 0.1 * torch.randn(k, generator=g, dtype=torch.float64)
    beta64 = 0.1 * torch.randn(k, generator=g, dtype=torch.float64)
    cin = c["x"][1]
    prev_scale64 = 1 + 0.1 * torch.randn(cin, generator=g, dtype=torch.float64)
    prev_bias64 = 0.1 * torch.randn(cin, generator=g, dtype=torch.float64)
    view = [1, -1] + [1] * (len(c["x"]) - 2)
    act64 = torch.relu(x_raw64 * prev_scale64.view(view) + prev_bias64.view(view))
    conv_args = (c["stride"], c["padding"], c["dilation"], False, [0] * (len(c["x"]) - 2), c["groups"])

    def layer(act, w, gamma, beta):
        y = aten.convolution(act, w, None, *conv_args)
        return torch.relu(torch.nn.functional.batch_norm(y, None, None, gamma, beta, training=True, eps=eps))

    ref64 = layer(act64.to(device), w64.to(device), gamma64.to(device), beta64.to(device))
    scale = max(float(ref64.abs().max()), 1e-30)
    data = {k_: cl(v.to(dtype).to(device), "channels_last") if v.dim() > 1 else v.to(dtype).to(device)
            for k_, v in {"x_raw": x_raw64, "act": act64, "w": w64, "gamma": gamma64, "beta": beta64,
                          "prev_scale": prev_scale64, "prev_bias": prev_bias64}.items()}

    def err(out: torch.Tensor) -> float:
        return float((out.double() - ref64).abs().max()) / scale

    opts = inductor_mode_options()
    compiled = torch.compile(layer, options=opts, fullgraph=True, dynamic=False)
    fns = {"inductor": lambda: compiled(data["act"], data["w"], data["gamma"], data["beta"])}
    row: dict = {"errors": {}, "err64": {"inductor": err(fns["inductor"]())}}
    if device == "cuda":
        apply = torch.compile(lambda y, s, sq, ga, be: bn_apply(y, s, sq, ga, be, eps, relu=True).to(y.dtype),
                              options=opts, fullgraph=True, dynamic=False)
        finalize = torch.compile(_finalize, options=opts, fullgraph=True, dynamic=False)
        try:
            plain = CudnnConvGenstats(data["act"], data["w"], c["stride"], c["padding"], c["dilation"], c["groups"])

            def genstats_apply():
                y, s, sq = plain(data["act"], data["w"])
                return apply(y, s, sq, data["gamma"], data["beta"])
            row["err64"]["cudnn genstats + apply"] = err(genstats_apply())
            fns["cudnn genstats + apply"] = genstats_apply
        except (NotSupportedByCudnn, RuntimeError, ValueError, TypeError) as exc:
            row["errors"]["cudnn genstats + apply"] = f"{type(exc).__name__}: {str(exc)[:400]}"
        try:
            chained = CudnnConvGenstats(data["x_raw"], data["w"], c["stride"], c["padding"], c["dilation"],
                                        c["groups"], prologue=True)
            n_prev = math.prod(c["x"]) // cin
            prev_sum, prev_sq = (x_raw64.sum([0] + list(range(2, len(c["x"])))),
                                 (x_raw64 ** 2).sum([0] + list(range(2, len(c["x"])))))
            prev = {"sum": prev_sum.float().to(device), "sq": prev_sq.float().to(device)}

            def chain_layer():
                sc, bi = finalize(prev["sum"], prev["sq"], n_prev, data["prev_scale"], data["prev_bias"])
                return chained(data["x_raw"], data["w"], sc.to(dtype), bi.to(dtype))
            fns["cudnn bn-relu prologue + genstats + finalize"] = chain_layer
            # its value: this layer's BatchNorm-ReLU of y, from the statistics it wrote (checked, not timed)
            y, s, sq = chain_layer()
            act_chained = _chained_reference(x_raw64, prev_sum, prev_sq, n_prev, prev_scale64, prev_bias64)
            expected = layer(act_chained.to(device), w64.to(device), gamma64.to(device), beta64.to(device))
            got = bn_apply(y, s, sq, data["gamma"], data["beta"], eps, relu=True)
            row["err64"]["cudnn bn-relu prologue + genstats + finalize"] = float(
                (got.double() - expected).abs().max()) / max(float(expected.abs().max()), 1e-30)
        except (NotSupportedByCudnn, RuntimeError, ValueError, TypeError) as exc:
            row["errors"]["cudnn bn-relu prologue + genstats + finalize"] = f"{type(exc).__name__}: {str(exc)[:400]}"
    else:
        row["errors"] = {k_: "cuDNN needs a CUDA device" for k_ in
                         ("cudnn genstats + apply", "cudnn bn-relu prologue + genstats + finalize")}
    timing = bench_interleaved(fns, rounds=5)
    row["ms"] = {k_: round(v, 4) for k_, v in timing.median_ms.items()}
    row["noise_pct"] = {k_: round(v, 2) for k_, v in timing.noise_pct.items()}
    return row


def _finalize(total, sq_total, n: int, gamma, beta, eps: float = 1e-5):
    """The per-channel scale and bias of a training-mode BatchNorm from its statistics' sums."""
    mean = total / n
    var = (sq_total / n - mean * mean).clamp_min(0)
    scale = gamma * torch.rsqrt(var + eps)
    return scale, beta - mean * scale


def _chained_reference(x_raw64, total, sq_total, n, gamma, beta):
    """The activation the chained layer convolves, in float64: the previous BatchNorm-ReLU of its raw output."""
    sc, bi = _finalize(total, sq_total, n, gamma, beta)
    view = [1, -1] + [1] * (x_raw64.dim() - 2)
    return torch.relu(x_raw64 * sc.view(view) + bi.view(view))


def _layout(t: torch.Tensor, layout: str) -> torch.Tensor:
    if layout == "contiguous":
        return t.contiguous()
    return channels_last(t)


def time_region(e: ConvEpilogue, shapes: dict, device: str = "cuda", dtype: torch.dtype = torch.float32) -> dict:
    g = torch.Generator(device="cpu").manual_seed(0)
    x64 = torch.randn(shapes["x"], generator=g, dtype=torch.float64)
    fan_in = math.prod(shapes["w"][1:]) if not e.conv.transposed else math.prod(shapes["w"][2:]) * shapes["w"][0]
    w64 = torch.randn(shapes["w"], generator=g, dtype=torch.float64) / fan_in ** 0.5
    b64 = torch.randn(shapes["w"][1 if e.conv.transposed else 0] * (e.conv.groups if e.conv.transposed else 1),
                      generator=g, dtype=torch.float64) if e.conv.bias else None
    ops64 = [torch.randn(s, generator=g, dtype=torch.float64) for s in shapes["operands"]]
    cuda = {"x": x64.to(dtype).to(device), "w": w64.to(dtype).to(device),
            "b": None if b64 is None else b64.to(dtype).to(device), "ops": [o.to(dtype).to(device) for o in ops64]}
    ref64 = reference(e, x64.to(device), w64.to(device), None if b64 is None else b64.to(device),
                      [o.to(device) for o in ops64])
    scale = max(float(ref64.abs().max()), 1e-30)

    def err(out: torch.Tensor) -> float:
        return float((out.double() - ref64).abs().max()) / scale

    compiled = torch.compile(lambda x, w, b, *o: reference(e, x, w, b, o), options=inductor_mode_options(),
                             fullgraph=True, dynamic=False)
    fns = {"inductor": lambda: compiled(cuda["x"], cuda["w"], cuda["b"], *cuda["ops"])}
    row: dict = {"errors": {}, "err64": {"inductor": err(fns["inductor"]())}}
    for name, (lin, lout) in LAYOUTS.items():
        if device != "cuda":
            row["errors"][name] = "cuDNN needs a CUDA device"
            continue
        x, w = _layout(cuda["x"], lin), _layout(cuda["w"], lin)
        try:
            fused = CudnnConvEpilogue(e, x, w, cuda["b"], cuda["ops"], out_layout=lout)
        except (NotSupportedByCudnn, RuntimeError, ValueError, TypeError) as exc:
            row["errors"][name] = f"{type(exc).__name__}: {str(exc)[:400]}"
            continue
        out = torch.empty_strided(fused.out_shape, fused.out_stride, dtype=dtype, device=device)

        def run(fused=fused, x=x, w=w, out=out):
            return fused(x, w, cuda["b"], cuda["ops"], out=out)
        row["err64"][name] = err(run())
        fns[name] = run
    timing = bench_interleaved(fns, rounds=5)
    row["ms"] = {k: round(v, 4) for k, v in timing.median_ms.items()}
    row["noise_pct"] = {k: round(v, 2) for k, v in timing.noise_pct.items()}
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problems", nargs="+")
    ap.add_argument("--out", default="runs/cudnn-fusion")
    ap.add_argument("--budget-s", type=float, default=400.0)
    ap.add_argument("--device", default="cuda", help="cpu: a smoke run (Inductor's side only, no cuDNN)")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="fp32",
                    help="the data's dtype on both sides (bf16: what a job under the bf16 policy compiles)")
    args = ap.parse_args(argv)
    dtype = DTYPES[args.dtype]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    rows: list[dict] = []
    seen: set[str] = set()
    for p in args.problems:
        problem = Path(p)
        if time.monotonic() - t0 > args.budget_s:
            rows.append({"problem": problem.name, "skipped": "past the budget"})
            continue
        try:
            regions, bn_convs = graph_regions(problem, args.device)
        except Exception as exc:  # a problem that does not trace is a row, not the end of the run
            rows.append({"problem": problem.name, "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
            continue
        unfusable: dict[str, int] = {}
        for r, shapes in regions:
            if not r.fusable or r.epilogue is None:
                unfusable[r.reason] = unfusable.get(r.reason, 0) + 1
                continue
            key = json.dumps([r.epilogue.to_dict(), shapes], sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            row = {"problem": problem.name, "region": r.epilogue.summary(), "shapes": shapes}
            try:
                row.update(time_region(r.epilogue, shapes, args.device, dtype=dtype))
            except Exception as exc:
                row["error"] = f"{type(exc).__name__}: {exc}"[:600]
                row["traceback"] = traceback.format_exc()[-3000:]
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "traceback"}), flush=True)
        if unfusable:
            rows.append({"problem": problem.name, "not_fusable": unfusable})
        for c in bn_convs:
            key = json.dumps(c, sort_keys=True)
            if key in seen or time.monotonic() - t0 > args.budget_s:
                continue
            seen.add(key)
            row = {"problem": problem.name, "region": _bn_summary(c), "shapes": c}
            try:
                row.update(time_bn(c, args.device, dtype=dtype))
            except Exception as exc:
                row["error"] = f"{type(exc).__name__}: {exc}"[:600]
                row["traceback"] = traceback.format_exc()[-3000:]
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "traceback"}), flush=True)
        device = torch.cuda.get_device_name() if args.device == "cuda" else args.device
        (out / "cudnn_fusion.json").write_text(json.dumps({"device": device, "torch": torch.__version__,
                                                           "dtype": args.dtype, "rows": rows}, indent=1))
    (out / "cudnn_fusion.md").write_text(markdown(rows, args.dtype))
    print(markdown(rows, args.dtype))
    return 0


def _bn_summary(c: dict) -> str:
    k = "x".join(map(str, c["w"][2:]))
    return (f"conv{len(c['x']) - 2}d {c['x'][1]}->{c['w'][0]} k{k} s{c['stride'][0]} g{c['groups']} "
            f"@{'x'.join(map(str, c['x'][2:]))} -> BN(train) -> ReLU")


def markdown(rows: list[dict], dtype: str = "fp32") -> str:
    lines = [f"Data: {dtype} on both sides; convolutions in the caller's math mode.", "",
             "| problem | region | variant | ms | x inductor | err64 |", "|---|---|---|---|---|---|"]
    for r in rows:
        if "ms" not in r:
            what = r.get("error") or r.get("skipped") or "; ".join(f"{n}x {why}" for why, n in
                                                                 (r.get("not_fusable") or {}).items())
            lines.append(f"| {r['problem']} | {r.get('region', '-')} | - | - | - | {what} |")
            continue
        base = r["ms"]["inductor"]
        for name, ms in r["ms"].items():
            lines.append(f"| {r['problem']} | {r['region']} | {name} | {ms:.4f} | {base / ms:.3f} | "
                         f"{r['err64'].get(name, float('nan')):.2e} |")
        for name, why in r.get("errors", {}).items():
            lines.append(f"| {r['problem']} | {r['region']} | {name} | - | - | refused: {why[:160]} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
