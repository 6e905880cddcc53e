"""fp32 convolutions on the GPU: cuDNN fp32 and TF32 against the constructions of
`kernels/conv_emulated.py` (the conv_fp32 generator's), side by side in one run.

Shapes: every `aten.convolution` the suite's convolution problems run (`PROBLEMS`: 2-D and 3-D,
transposed, grouped and depthwise, from benchmarks/problems/level1/23, level2/03-18 and level3/02-11),
found by running each problem's Model(*get_init_inputs()) on get_inputs() on the meta device under a
dispatch mode that records the calls (no memory, no compute); identical calls are measured once.

For each shape: every method's median time (`triton.testing.do_bench`, L2 flushed
before each call), its speedup over cuDNN fp32 (TF32 off), and its max error
against a float64 convolution of the same inputs (max|y - y64| / max|y64|), also as
ρ = err / err(cuDNN fp32). Admissible: ρ ≤ 1 (the GEMM benchmark's rule). Errors
are measured on the first --err-images images of the batch (a convolution is
computed per image, so the arithmetic is the same; the float64 reference of a
whole batch would take longer than the run may). Times include everything a
method does per call (split pass, channels_last conversion).

Times are of the call as Inductor makes it: `extern_kernels.convolution(..., bias=None)`, every
call of the suite (Inductor moves a convolution's bias into its epilogue kernel). Eager's
`aten.convolution` with a bias runs a second kernel that reads and writes the whole output again
(cuDNN's convolution, then the add): timing that as "the baseline's call" doubled it on the
suite's biased shapes (benchmarks/results/2026-12-05-h100-conv-strict). Errors are measured with the
bias, as eager computes them; the ↳ rows add it back before the epilogue.

With and without the epilogue: the same meta-device run records what each problem does with the
convolution's output up to its next convolution (the table's last column: aten ops, views left out;
an InstanceNorm shows as the native_batch_norm it runs). Where that starts with element-wise ops
reading only the output and parameters or constants (level2/10, 11, 16, 18: bias, activations,
scales, clamps), each method is timed again followed by those ops (the ↳ rows), replayed eagerly on
random parameters: one kernel per op, as eager PyTorch runs them (Inductor fuses them into one
kernel, so these rows overstate the epilogue's share), on the method's own output layout. Not
timed (the column names it): an epilogue that begins with a norm, a pool, a softmax or a reduction
(the other shapes), whatever follows the first such op, and the epilogues of a shape's other problems.

    python3 benchmarks/conv_fp32.py --out DIR                 # on one GPU, < 120 s
    python3 benchmarks/conv_fp32.py --cpu-smoke --out DIR     # tiny shapes on the CPU (TF32 emulated)

Writes DIR/conv_fp32.json and DIR/conv_fp32.md (after every shape). Imports torch,
triton (GPU runs only) and the standard library.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import runpy
import statistics
import sys
import time
import traceback
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's root, which holds the `kernelopt` package
try:
    from kernelopt.kernels import conv_emulated as ce
    from kernelopt.kernels.cudnn_autotuned import cudnn_benchmark_scope
except ImportError:  # run from a folder holding conv_emulated.py and cudnn_autotuned.py
    import conv_emulated as ce  # type: ignore[no-redef]
    from cudnn_autotuned import cudnn_benchmark_scope  # type: ignore[no-redef]

PROBLEMS = ["level2/03_conv_bn_relu", "level2/04_conv_groupnorm_mean", "level2/07_conv_softmax_maxpool",
            "level2/10_convtranspose_bias_tanh_center", "level2/11_conv_scale_min",
            "level2/13_conv_instancenorm_gelu", "level2/14_conv3d_maxpool_silu",
            "level2/15_convtranspose_batchnorm_relu", "level2/16_convtranspose3d_bias_hardswish_clamp_gelu",
            "level2/17_conv_logsumexp", "level2/18_conv_grouped_subtract_mish_scale",
            # the graph rewrites' problems (issue 34): their convolutions are measured like the others
            "level2/21_convtranspose_gap_bias_lse", "level2/22_convtranspose3d_mean_depth_softmax",
            "level2/23_conv_avgpool_sigmoid_sum", "level2/25_conv_scale_global_avgpool",
            "level2/27_nearmiss_conv_bn_mean", "level2/28_nearmiss_conv_padded_avgpool",
            "level2/30_convtranspose2d_gelu_scale_tanh", "level2/31_convtranspose2d_groupnorm_silu",
            "level2/32_convtranspose3d_maxpool_relu", "level2/33_convtranspose3d_softmax_sum",
            "level2/34_conv_channel_mean_sigmoid", "level2/35_convtranspose3d_scale_avgpool_bias_scale",
            "level3/02_cnn_block",
            "level3/03_resnet_basic_block", "level3/08_squeeze_excitation_block", "level3/10_resnet_basic_block_stack",
            "level3/11_depthwise_separable_block", "level1/23_conv_transpose2d_grouped_dilated"]
#: A suite problem with more convolutions than this is a network (level3's ResNets, VGG, MobileNets, ...): its
#: convolutions are measured by its jobs (`kernelopt bench`), not one by one here; PROBLEMS holds the others.
NETWORK_CONVOLUTIONS = 8
#: --cpu-smoke: (name, input shape, weight shape, has bias, aten.convolution arguments)
SMOKE = [
    ("smoke conv2d 3x3", (2, 32, 12, 12), (16, 32, 3, 3), True, dict(padding=1)),
    ("smoke convT grouped dilated", (2, 16, 8, 8), (16, 8, 3, 3), False,
     dict(stride=2, padding=1, dilation=2, transposed=True, output_padding=1, groups=4)),
    ("smoke convT3d", (2, 16, 4, 6, 6), (16, 8, 3, 3, 3), True,
     dict(stride=2, padding=1, transposed=True, output_padding=1)),
    ("smoke conv2d depthwise", (2, 16, 10, 10), (16, 1, 3, 3), False, dict(padding=1, groups=16)),
]
#: --cpu-smoke records this problem's epilogue (element-wise, reading no tensor but the convolution's output,
#: so it fits any shape) and replays it after the first smoke shape's methods
SMOKE_EPILOGUE = "level2/18_conv_grouped_subtract_mish_scale"

#: method -> description (all timed, all ranked)
INFO = {
    "cudnn_fp32": "cuDNN IEEE fp32 (cudnn.allow_tf32 off): the reference",
    "cudnn_tf32": "cuDNN TF32 (cudnn.allow_tf32 on, PyTorch's default): not fp32-accurate",
    "split3_chunk128": "3xTF32 on cuDNN, RN split, input channels chunked to a reduction <= 128 per term, "
                       "one TF32 conv per chunk on [x_lo|x_hi|x_hi]*[w_hi;w_lo;w_hi] (per group), chunks added in fp32",
    "split3_chunk256": "the same with chunks of <= 256 (the generator's default)",
    "split3_chunk512": "the same with chunks of <= 512",
    "split3_chunk256_separate": "as split3_chunk256 with three TF32 convs per chunk instead of one concatenated",
    "split3_chunk256_nhwc": "as split3_chunk256 with the input converted to channels_last first (timed)",
    "channels_last_fp32": "cuDNN IEEE fp32 on input and weight converted to channels_last (timed), result NHWC",
    "cudnn_tf32_nhwc": "cuDNN TF32 on channels_last operands (converted before timing): the call the baseline "
                       "makes, Inductor's layout optimization having converted them; not fp32-accurate",
    "cudnn_tf32_nhwc_autotuned": "the same with cuDNN's algorithm timed per shape (benchmark mode, every "
                                 "algorithm: the cudnn_autotune generator's call)",
    "cudnn_tf32_autotuned": "cuDNN TF32 on the model's NCHW operands, algorithm timed per shape",
    "triton_bf16x3": "implicit GEMM in Triton (benchmarks/conv_implicit_gemm.py; 2-D, not transposed), bf16x3 "
                     "products (emulated fp32), reading the model's NCHW input directly (no layout copy), result "
                     "NHWC; the fastest of its tile configs per shape",
    "triton_bf16x3_nhwc": "the same on channels_last operands (converted before timing, as cudnn_tf32_nhwc)",
    "triton_tf32_nhwc": "the same kernel with plain TF32 products on channels_last operands: how far Triton's "
                        "implicit GEMM is from cuDNN's at equal math; not fp32-accurate",
}
#: TF32 computes fp32 data in reduced precision: never an fp32 construction, whatever its error here (a CPU runs
#: it in fp32)
TF32_METHODS = {"cudnn_tf32", "cudnn_tf32_nhwc", "cudnn_tf32_nhwc_autotuned", "cudnn_tf32_autotuned", "triton_tf32_nhwc"}
#: the methods of benchmarks/conv_implicit_gemm.py: name -> (products, channels_last operands)
TRITON_METHODS = {"triton_bf16x3": ("bf16x3", False), "triton_bf16x3_nhwc": ("bf16x3", True),
                  "triton_tf32_nhwc": ("tf32", True)}
#: strict's float64 test (Gate 3): an emulated-fp32 candidate passes with rho <= 10 against eager's error, and
#: eager runs cuDNN fp32 convolutions in TF32 by PyTorch's default
RHO_MAX = 10.0


def record_convolutions(problem: Path) -> list[dict]:
    """The aten.convolution calls of one problem's forward, from a meta-device run, each with what follows it:
    `follows`, the aten ops (views left out) on its output and on what is computed from it, up to the next
    convolution; `epilogue`, the leading run of those that are element-wise, replayable (`epilogue_fn`)."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    calls: list[dict] = []
    chain_of: dict[int, int] = {}  # id(tensor) -> the call whose output it is computed from
    keep: list = []  # every tensor in chain_of, alive: an id is unique only while its tensor lives

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            ins = [t for t in tree_flatten((args, kwargs or {}))[0] if isinstance(t, torch.Tensor)]
            chains = {chain_of[id(t)] for t in ins if id(t) in chain_of}
            if func is torch.ops.aten.convolution.default:
                x, w, b, stride, padding, dilation, transposed, output_padding, groups = args
                for c in chains:  # a convolution ends the epilogue of the one it reads
                    calls[c]["_open"] = False
                calls.append(dict(x=list(x.shape), w=list(w.shape), bias=b is not None, stride=list(stride),
                                  padding=list(padding), dilation=list(dilation), transposed=bool(transposed),
                                  output_padding=list(output_padding), groups=int(groups), follows=[], epilogue=[],
                                  _open=True, _replayable=True, _values={id(out): 0}))
                chain_of[id(out)] = len(calls) - 1
                keep.append(out)
                return out
            if not chains or not calls[max(chains)]["_open"]:
                return out
            c = calls[max(chains)]  # a residual add reads an earlier chain too: the latest one owns it
            if func.overloadpacket.__name__ not in _VIEWS:
                c["follows"].append(func.overloadpacket.__name__)
            step = _replay_step(func, args, kwargs or {}, c["_values"], chain_of) if c["_replayable"] else None
            c["_replayable"] = step is not None
            if step is not None:
                c["epilogue"].append(step)
                c["_values"][id(out)] = len(c["epilogue"])
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor):
                    chain_of[id(t)] = max(chains)
                    keep.append(t)
            return out

    ns = runpy.run_path(str(problem))
    with torch.device("meta"):
        model = ns["Model"](*ns["get_init_inputs"]())
        inputs = ns["get_inputs"]()
    with Recorder(), torch.no_grad():
        model(*inputs)
    return [{k: v for k, v in c.items() if not k.startswith("_")} for c in calls]


#: ops that only re-view a tensor: not listed in `follows` (they do end the replayable epilogue)
_VIEWS = {"view", "_unsafe_view", "reshape", "expand", "permute", "squeeze", "unsqueeze", "t", "transpose", "alias",
          "detach", "slice", "select", "as_strided"}


#: element-wise activations aten leaves without its `pointwise` tag (torch 2.11-2.13)
_UNTAGGED_POINTWISE = {"hardswish", "hardswish_", "gelu_", "mish_", "threshold_"}


def _replay_step(func, args, kwargs, values: dict, chain_of: dict):
    """One element-wise op as JSON: {"value": k} for the convolution's output (0) or the k-th op's result,
    {"tensor": shape, "dtype": d} for a parameter or constant (replayed as random data), literals as they are.
    None where the op is not element-wise or reads anything else computed from the convolution."""
    if torch.Tag.pointwise not in func.tags and func.overloadpacket.__name__ not in _UNTAGGED_POINTWISE:
        return None

    def enc(a):
        if isinstance(a, torch.Tensor):
            if id(a) in values:
                return {"value": values[id(a)]}
            if id(a) in chain_of:
                raise ValueError("reads an intermediate of the convolution the epilogue does not keep")
            return {"tensor": list(a.shape), "dtype": str(a.dtype).removeprefix("torch.")}
        if a is None or isinstance(a, (bool, int, float, str)):
            return a
        if isinstance(a, (list, tuple)) and all(isinstance(v, (bool, int, float)) for v in a):
            return list(a)
        raise ValueError(f"argument {a!r}")

    try:
        return {"op": str(func), "args": [enc(a) for a in args], "kwargs": {k: enc(v) for k, v in kwargs.items()}}
    except ValueError:
        return None


def epilogue_fn(steps: list[dict], device: str, seed: int = 1):
    """y -> the recorded element-wise epilogue applied to y as eager PyTorch runs it: one kernel per op, each
    reading and writing whole tensors (Inductor fuses such a chain into one kernel: this is its upper bound)."""
    g = torch.Generator(device=device).manual_seed(seed)

    def operand(a):
        if isinstance(a, dict) and "tensor" in a:
            return torch.randn(a["tensor"], generator=g, device=device).to(getattr(torch, a["dtype"]))
        return a

    ops = []
    for st in steps:
        func = torch.ops.aten
        for part in st["op"].split(".")[1:]:  # "aten.add.Tensor"
            func = getattr(func, part)
        ops.append((func, [operand(a) for a in st["args"]], {k: operand(v) for k, v in st["kwargs"].items()}))

    def run(y):
        vals = [y]

        def pick(a):
            return vals[a["value"]] if isinstance(a, dict) else a

        for func, args, kwargs in ops:
            vals.append(func(*map(pick, args), **{k: pick(v) for k, v in kwargs.items()}))
        return vals[-1]

    return run


def suite_shapes(log) -> dict[str, dict]:
    """name -> call; a call several problems (or one twice) make is measured once, listing them all (`problems`)
    and what follows it in each (`after`)."""
    shapes: dict[str, dict] = {}
    by_key: dict[str, dict] = {}
    for name in PROBLEMS:
        try:
            calls = record_convolutions(ROOT / "benchmarks" / "problems" / f"{name}.py")
        except Exception as exc:  # a problem that does not run on meta: say so, keep the others
            log(f"{name}: shapes not recorded ({type(exc).__name__}: {exc})")
            continue
        for i, rec in enumerate(calls):
            c = {k: v for k, v in rec.items() if k not in ("follows", "epilogue")}
            after = dict(problem=f"{name}#{i}", follows=rec["follows"], epilogue=rec["epilogue"])
            key = json.dumps(c, sort_keys=True)
            if key in by_key:
                by_key[key]["problems"].append(f"{name}#{i}")
                by_key[key]["after"].append(after)
                continue
            by_key[key] = dict(c, problems=[f"{name}#{i}"], after=[after])
            shapes[f"{short(name)}#{i} " + describe(c)] = by_key[key]
    return shapes


def short(problem: str) -> str:
    """level2/10_convtranspose_bias_tanh_center -> 2/10"""
    level, name = problem.split("/")[:2]
    return f"{level[-1]}/{name[:2]}"


def follows_text(after: list[dict], limit: int = 8) -> str:
    """What follows a shape in each problem that runs it, identical sequences listed once."""
    by_ops: dict[str, list[str]] = {}
    for a in after:
        ops = a["follows"][:limit] + (["…"] if len(a["follows"]) > limit else [])
        by_ops.setdefault(", ".join(ops) or "nothing (the output)", []).append(
            short(a["problem"]) + "#" + a["problem"].rsplit("#", 1)[1])
    return "; ".join(f"{' '.join(names)}: {ops}" for ops, names in by_ops.items())


def describe(c: dict) -> str:
    k = "x".join(map(str, c["w"][2:]))
    kind = "convT" if c["transposed"] else "conv"
    extra = [f"{n}{v[0]}" for n, v, default in (("s", c["stride"], 1), ("p", c["padding"], 0), ("d", c["dilation"], 1))
             if any(i != default for i in v)]
    if c["groups"] != 1:
        extra.append(f"g{c['groups']}")
    c_out = c["w"][1] * c["groups"] if c["transposed"] else c["w"][0]
    return f"{kind} {'x'.join(map(str, c['x']))} k{k} ->{c_out}" + (
        f" ({','.join(extra)})" if extra else "")


def make_operands(c: dict, device: str, seed: int = 0):
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(c["x"], generator=g, device=device)
    w = torch.randn(c["w"], generator=g, device=device) / math.sqrt(math.prod(c["w"][1:]))
    c_out = c["w"][1] * c["groups"] if c["transposed"] else c["w"][0]
    b = torch.randn(c_out, generator=g, device=device) if c["bias"] else None
    args = ce.conv_args(len(c["x"]) - 2, c["stride"], c["padding"], c["dilation"], c["transposed"],
                        c["output_padding"], c["groups"])
    return x, w, b, args


def methods(x, w, b, args, tiles: dict | None = None) -> dict:
    """name -> zero-argument callable returning the fp32 result; `tiles`: the Triton methods' tile configs
    (tune_triton), those methods left out without."""
    fmt = ce.channels_last_format(x.dim())
    out = {
        "cudnn_fp32": lambda: ce.fp32_conv(x, w, b, args),
        "cudnn_tf32": lambda: ce.tf32_conv(x, w, b, args),
        "split3_chunk128": lambda: ce.split3_conv(x, w, b, args, chunk=128),
        "split3_chunk256": lambda: ce.split3_conv(x, w, b, args, chunk=256),
        "split3_chunk512": lambda: ce.split3_conv(x, w, b, args, chunk=512),
        "split3_chunk256_separate": lambda: ce.split3_conv(x, w, b, args, chunk=256, layout="separate"),
    }
    if fmt is not None:
        out["split3_chunk256_nhwc"] = lambda: ce.split3_conv(x.contiguous(memory_format=fmt), w, b, args, chunk=256)
        out["channels_last_fp32"] = lambda: ce.channels_last_conv(x, w, b, args)
        xl, wl = x.contiguous(memory_format=fmt), w.contiguous(memory_format=fmt)
        out["cudnn_tf32_nhwc"] = lambda: tf32_call(xl, wl, b, args, autotuned=False)
        out["cudnn_tf32_nhwc_autotuned"] = lambda: tf32_call(xl, wl, b, args, autotuned=True)
    out["cudnn_tf32_autotuned"] = lambda: tf32_call(x, w, b, args, autotuned=True)
    for name, cfg in (tiles or {}).items():
        out[name] = triton_call(name, x, w, b, args, cfg)
    return out


def _implicit_gemm():
    try:
        from benchmarks import conv_implicit_gemm as cig
    except ImportError as exc:
        if "triton" in str(exc):
            raise
        import conv_implicit_gemm as cig  # type: ignore[no-redef]  # run from a folder holding it
    return cig


def triton_call(name: str, x, w, b, args, cfg):
    cig = _implicit_gemm()

    precision, nhwc = TRITON_METHODS[name]
    if nhwc:
        x, w = x.contiguous(memory_format=torch.channels_last), w.contiguous(memory_format=torch.channels_last)
    return lambda: cig.conv2d(x, w, b, args.stride, args.padding, args.dilation, args.groups, precision, cfg)


def tune_triton(x, w, b, args, device: str, log) -> dict:
    """name -> the fastest tile config of each Triton method on this shape (none where the kernel does not
    apply); the interpreter (CPU) takes the first config."""
    try:
        cig = _implicit_gemm()
    except ImportError as exc:  # no triton on this machine
        log(f"  triton methods left out: {exc}")
        return {}
    why = cig.applies(x, w, args.transposed)
    if why is not None:
        log(f"  triton methods left out: {why}")
        return {}
    tiles = {}
    for name in TRITON_METHODS:
        if device != "cuda":
            tiles[name] = cig.CONFIGS[0]
            continue
        timed = []
        for cfg in cig.CONFIGS:
            try:
                timed.append((time_ms(triton_call(name, x, w, b, args, cfg), device, 5.0, 15.0), cfg))
            except Exception as exc:  # a config the compiler refuses (shared memory): the others stay
                log(f"  {name} {cfg.label()}: {type(exc).__name__}: {str(exc)[:120]}")
        if timed:
            tiles[name] = min(timed, key=lambda t: t[0])[1]
    return tiles


def tf32_call(x, w, b, args, autotuned: bool):
    """One cuDNN TF32 convolution (the bias, where given, in the call: bench_shape times it without, as
    Inductor's `extern_kernels.convolution` makes it); `autotuned`: under cuDNN's benchmark mode
    (kernels/cudnn_autotuned.py). CPU: plain fp32 (no cuDNN)."""
    import contextlib

    with ce.cudnn_tf32_scope(True), (cudnn_benchmark_scope() if autotuned else contextlib.nullcontext()):
        return args.call(x, w, b)


def time_ms(fn, device: str, warmup_ms: float, rep_ms: float) -> float:
    if device == "cuda":
        import triton.testing

        return float(triton.testing.do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median"))
    times = []
    for _ in range(3):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def bench_shape(c: dict, device: str, args_ns, budget_end: float, log) -> dict:
    x, w, b, args = make_operands(c, device)
    # timed as Inductor calls it: bias=None, the bias joining its epilogue kernel (module docstring)
    tiles = tune_triton(x, w, None, args, device, log) if time.time() < budget_end else {}
    n_err = min(args_ns.err_images, x.shape[0])
    xe = x[:n_err].contiguous()
    ref = args.call(xe.double(), w.double(), b.double() if b is not None else None)
    errs = {name: ce.max_rel_error(fn(), ref) for name, fn in methods(xe, w, b, args, tiles).items()}
    del ref
    rows: dict = {}
    base, eager = errs["cudnn_fp32"], errs["cudnn_tf32"]
    for name, fn in methods(x, w, None, args, tiles).items():
        if time.time() > budget_end and name != "cudnn_fp32":
            rows[name] = {"skipped": "time budget", "err": errs[name]}
            continue
        try:
            ms = time_ms(fn, device, args_ns.warmup_ms, args_ns.rep_ms)
        except Exception as exc:  # out of memory on a big shape, an unsupported cuDNN case: a row, not a crash
            rows[name] = {"error": f"{type(exc).__name__}: {exc}"[:300], "err": errs[name]}
            continue
        rows[name] = {"ms": ms, "err": errs[name], "rho": errs[name] / base if base else None,
                      "rho_eager": errs[name] / eager if eager else None}
        if name in tiles:
            rows[name]["tile"] = tiles[name].label()
    fp32_ms, tf32_ms = rows["cudnn_fp32"]["ms"], rows.get("cudnn_tf32_nhwc", {}).get("ms")
    for name, r in rows.items():
        if "ms" in r:
            r["speedup"] = fp32_ms / r["ms"]
            # against the baseline's own call (Inductor hands cuDNN channels-last operands, TF32 by default)
            r["vs_baseline_call"] = tf32_ms / r["ms"] if tf32_ms else None
            emulated = name not in TF32_METHODS
            r["admissible"] = emulated and r["rho"] is not None and r["rho"] <= 1.0
            # strict's float64 test against eager's error (eager ran its convolution in TF32)
            r["passes_strict_gate3"] = emulated and r["rho_eager"] is not None and r["rho_eager"] <= RHO_MAX
    plan = ce.split3_plan(x, w, args, 256)
    rows["_plan256"] = plan.describe()
    timed = next((a for a in c.get("after", []) if a["epilogue"]), None)
    if timed is not None:
        rows["_epilogue"] = bench_epilogue(timed, x, w, b, args, rows, device, args_ns, budget_end, tiles)
    log("  done: " + ", ".join(f"{k} {v['ms']:.3f} ms rho {v['rho']:.2g}" for k, v in rows.items()
                                if isinstance(v, dict) and "ms" in v))
    return rows


def bench_epilogue(after: dict, x, w, b, args, bare: dict, device: str, args_ns, budget_end: float,
                   tiles: dict | None = None) -> dict:
    """Each method followed by the recorded element-wise epilogue of one problem, eager (epilogue_fn); the
    methods measured bare only (skipped, failed) are left out here too."""
    epi = epilogue_fn(after["epilogue"], device)
    out: dict = {"from": after["problem"], "ops": [st["op"].split(".")[1] for st in after["epilogue"]], "methods": {}}
    # the bare rows time the call without its bias (Inductor's); here it comes back, one eager add first
    bias = b.view(1, -1, *([1] * (x.dim() - 2))) if b is not None else None
    for name, fn in methods(x, w, None, args, tiles).items():
        if "ms" not in bare.get(name, {}) or (time.time() > budget_end and name != "cudnn_fp32"):
            continue
        try:
            run = (lambda fn=fn: epi(fn() + bias)) if bias is not None else (lambda fn=fn: epi(fn()))
            out["methods"][name] = {"ms": time_ms(run, device, args_ns.warmup_ms, args_ns.rep_ms)}
        except Exception as exc:  # out of memory with the epilogue's temporaries: a row, not a crash
            out["methods"][name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    base = out["methods"].get("cudnn_fp32", {}).get("ms")
    for r in out["methods"].values():
        if base and "ms" in r:
            r["speedup"] = base / r["ms"]
    return out


def markdown(results: dict) -> str:
    names = list(INFO)
    lines = [f"# fp32 convolutions: cuDNN fp32/TF32 vs conv_fp32's constructions ({results['device']})", "",
             f"{results['started']}; torch {results['torch']}; {results.get('cudnn', '')}; "
             f"errors on the first {results['err_images']} image(s); ρ = err / err(cuDNN fp32); ✗: ρ > 1. "
             "Times are of the call as Inductor makes it, without the bias (it joins Inductor's epilogue kernel). "
             "↳ rows: the same methods, each followed by the bias and the element-wise epilogue named there, run eagerly "
             "(one kernel per op; ρ and ✗ of the bare convolution). Strict's float64 test: an emulated-fp32 "
             f"method passes Gate 3 with ρ_eager = err / err(cuDNN TF32, eager's call) ≤ {RHO_MAX:g}; that column "
             "gives its time as a multiple of the baseline's own call (cudnn_tf32_nhwc: > 1 is faster).", "",
             "| shape | " + " | ".join(names) + " | best admissible | fastest passing strict's float64 test, × the "
             "baseline's call | follows it (problem#call: aten ops) |",
             "|---|" + "---|" * (len(names) + 3)]
    speedups, with_epilogue, vs_call = [], [], []
    for shape, rows in results["shapes"].items():
        cells = []
        for n in names:
            r = rows.get(n)
            if r is None:
                cells.append("")
            elif "ms" not in r:
                cells.append(r.get("skipped") or "error")
            elif n == "cudnn_fp32":
                cells.append(f"{r['ms']:.3f} ms, err {r['err']:.1e}")
            else:
                cells.append(f"{r['ms']:.3f} ms {r['speedup']:.2f}× ρ {r['rho']:.2g}" + ("" if r["admissible"] else " ✗")
                             + (f" ({r['tile']})" if "tile" in r else ""))
        ok = [(r["speedup"], n) for n, r in rows.items() if isinstance(r, dict) and r.get("admissible")]
        best = max(ok) if ok else (1.0, "cudnn_fp32")
        speedups.append(max(best[0], 1.0))
        cells.append(f"{best[1]} {best[0]:.2f}×")
        gate3 = [(r["vs_baseline_call"], n, r["rho_eager"]) for n, r in rows.items()
                 if isinstance(r, dict) and r.get("passes_strict_gate3") and r.get("vs_baseline_call")]
        if gate3:
            top = max(gate3)
            vs_call.append(top[0])
            cells.append(f"{top[1]} {top[0]:.2f}× (ρ_eager {top[2]:.2g})")
        else:
            cells.append("")
        cells.append(follows_text(results["calls"].get(shape, {}).get("after", [])))
        lines.append(f"| {shape} | " + " | ".join(cells) + " |")
        epi = rows.get("_epilogue")
        if epi and "ms" in epi["methods"].get("cudnn_fp32", {}):
            cells = []
            for n in names:
                r = epi["methods"].get(n)
                cells.append("" if r is None else "error" if "ms" not in r else
                             f"{r['ms']:.3f} ms" + ("" if n == "cudnn_fp32" else f" {r['speedup']:.2f}×")
                             + ("" if rows[n].get("admissible", True) else " ✗"))
            ok = [(r["speedup"], n) for n, r in epi["methods"].items() if "ms" in r and rows[n].get("admissible")]
            best = max(ok) if ok else (1.0, "cudnn_fp32")
            with_epilogue.append(max(best[0], 1.0))
            cells.append(f"{best[1]} {best[0]:.2f}×")
            cells.append(f"timed: {', '.join(epi['ops'])} ({short(epi['from'])}#{epi['from'].rsplit('#', 1)[1]})")
            lines.append("| ↳ + epilogue, eager | " + " | ".join(cells) + " |")
    for label, values in (("", speedups), (" with its element-wise epilogue (↳ rows)", with_epilogue)):
        if values:
            geo = math.exp(sum(math.log(s) for s in values) / len(values))
            lines += ["", f"Geomean of the best admissible method per shape{label} (1.0× where none is faster): "
                      f"{geo:.2f}× over {len(values)}"]
    if vs_call:
        geo = math.exp(sum(math.log(s) for s in vs_call) / len(vs_call))
        lines += ["", f"Geomean of the fastest method passing strict's float64 test per shape, against the baseline's "
                  f"own call (cuDNN TF32, channels-last): {geo:.3f}× over {len(vs_call)} (range "
                  f"{min(vs_call):.2f}–{max(vs_call):.2f})"]
    lines += ["", "Methods:", ""] + [f"- `{n}`: {d}" for n, d in INFO.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--cpu-smoke", action="store_true", help="tiny shapes on the CPU (TF32 emulated)")
    ap.add_argument("--only", default=None, help="comma-separated substrings of shape names")
    ap.add_argument("--warmup-ms", type=float, default=10.0, help="do_bench warmup per method (ms)")
    ap.add_argument("--rep-ms", type=float, default=40.0, help="do_bench rep per method (ms)")
    ap.add_argument("--err-images", type=int, default=2, help="images of the batch the errors are measured on")
    ap.add_argument("--budget-s", type=float, default=100.0, help="time only cuDNN fp32 after this many seconds")
    args_ns = ap.parse_args(argv)
    if args_ns.cpu_smoke:  # the Triton methods run in Triton's interpreter (set before triton is imported)
        os.environ.setdefault("TRITON_INTERPRET", "1")
    out = Path(args_ns.out)
    out.mkdir(parents=True, exist_ok=True)
    log_file = open(out / "conv_fp32.log", "a")

    def log(msg: str) -> None:
        print(msg, flush=True)
        log_file.write(msg + "\n")
        log_file.flush()

    start = time.time()
    device = "cpu" if args_ns.cpu_smoke else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        log("no CUDA device: run with --cpu-smoke for the CPU check")
        return 2
    if args_ns.cpu_smoke:
        shapes = {name: dict(x=list(xs), w=list(ws), bias=bias, **_full(kw, len(xs) - 2))
                  for name, xs, ws, bias, kw in SMOKE}
        rec = record_convolutions(ROOT / "benchmarks" / "problems" / f"{SMOKE_EPILOGUE}.py")[0]
        shapes[SMOKE[0][0]]["after"] = [dict(problem=f"{SMOKE_EPILOGUE}#0", follows=rec["follows"],
                                             epilogue=rec["epilogue"])]
    else:
        shapes = suite_shapes(log)
    if args_ns.only:
        keys = args_ns.only.split(",")
        shapes = {k: v for k, v in shapes.items() if any(s in k for s in keys)}
    results = {"started": datetime.datetime.now().isoformat(timespec="seconds"), "device":
               torch.cuda.get_device_name() if device == "cuda" else f"CPU ({platform.processor() or platform.machine()})",
               "torch": torch.__version__, "cudnn": f"cuDNN {torch.backends.cudnn.version()}" if device == "cuda" else "",
               "err_images": args_ns.err_images, "argv": sys.argv[1:], "methods": INFO, "shapes": {}, "calls": shapes}
    budget_end = start + args_ns.budget_s
    status = 0
    for name, c in shapes.items():
        log(f"{name} ({time.time() - start:.0f} s)")
        try:
            results["shapes"][name] = bench_shape(c, device, args_ns, budget_end, log)
        except Exception:
            status = 1
            results["shapes"][name] = {"error": traceback.format_exc()[-1500:]}
            log(results["shapes"][name]["error"])
        if device == "cuda":
            torch.cuda.empty_cache()
        results["wall_s"] = time.time() - start
        (out / "conv_fp32.json").write_text(json.dumps(results, indent=1))
        good = {k: v for k, v in results["shapes"].items() if "error" not in v}
        (out / "conv_fp32.md").write_text(markdown({**results, "shapes": good}))
    log(f"wall {time.time() - start:.1f} s; wrote {out / 'conv_fp32.md'}")
    return status


def _full(kw: dict, spatial: int) -> dict:
    a = ce.conv_args(spatial, **kw)
    return dict(stride=list(a.stride), padding=list(a.padding), dilation=list(a.dilation), transposed=a.transposed,
                output_padding=list(a.output_padding), groups=a.groups)


if __name__ == "__main__":
    sys.exit(main())
