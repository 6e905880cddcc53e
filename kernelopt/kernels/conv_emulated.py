"""fp32 convolutions on cuDNN: 3xTF32 emulation, channels_last dispatch, plain TF32.

`aten.convolution` (Conv1d/2d/3d, transposed, grouped, strided, dilated) is linear
in its input x and its weight w, so the TF32 split of kernels/gemm_split3.py
carries over unchanged:

    hi = x rounded to TF32 (the low 13 mantissa bits cleared), lo = x - hi (exact),
    conv(x, w) ~= conv(x_lo, w_hi) + conv(x_hi, w_lo) + conv(x_hi, w_hi)

(lo·lo is below fp32's resolution and dropped). Each term is a cuDNN TF32
convolution (tensor cores); `torch.backends.cudnn.allow_tf32` is switched on for
those calls only and restored after.

Two facts measured on GEMMs (benchmarks/results/2026-12-01-h200-gemm-fp32) shape
the construction; neither is yet measured on convolutions:

* the tensor cores' fp32 accumulation is not fp32-accurate over long reduction
  chains, so the reduction is cut into chunks: the input channels of each group
  are split so that one chunk's reduction length (channels per group x kernel
  taps) stays <= `chunk` (default 256, the GEMMs' admissible K-chunk), and the
  chunk results are added in fp32 (round-to-nearest);
* one library call on concatenated operands beats three chained ones where the
  output dominates: per chunk, one convolution of ``[x_lo | x_hi | x_hi]`` with
  ``[w_hi ; w_lo ; w_hi]`` concatenated along the input channels (``concat``;
  per group, so grouped convolutions keep their block structure), or three
  convolutions (``separate``).

The bias is added once, in fp32, after the chunks.

On a CPU the "tensor-core" convolution is emulated (`tc_conv`): both operands are
truncated to TF32 before an fp32 convolution, so the numerics of the split can be
tested without a GPU. `ConvEmu` is the object a candidate module calls in place of
Inductor's `extern_kernels.convolution` (search/generators/conv_group.py); it returns its
result in the strides the output module asserts for the library call's output.

This file imports only torch and the standard library: candidates embed it
verbatim, and benchmarks/conv_fp32.py imports it on a bare GPU box.
"""
from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence

import torch

TF32_MASK = ~0x1FFF  # keeps sign, exponent and the 10 mantissa bits a TF32 tensor core reads
TF32_HALF = 0x1000  # half of the last kept bit: adding it before masking rounds to nearest
#: the reduction length one tensor-core convolution may accumulate (GEMMs: K-chunks of 256 were
#: admissible on all six shapes of benchmarks/results/2026-12-01-h200-gemm-fp32; convolutions: admissible,
#: rho <= 1, on 6 of the suite's 10 shapes, benchmarks/results/2026-12-02-h200-conv-fp32)
DEFAULT_CHUNK = 256
METHODS = ("split3", "channels_last", "tf32", "fp32")


@dataclass(frozen=True)
class ConvArgs:
    """`aten.convolution`'s arguments after (input, weight, bias)."""

    stride: tuple
    padding: tuple
    dilation: tuple
    transposed: bool
    output_padding: tuple
    groups: int

    def call(self, x: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
        return torch.convolution(x, w, bias, list(self.stride), list(self.padding), list(self.dilation),
                                 self.transposed, list(self.output_padding), self.groups)


def conv_args(spatial: int, stride=1, padding=0, dilation=1, transposed=False, output_padding=0,
              groups=1) -> ConvArgs:
    """ConvArgs with each per-dimension argument expanded to `spatial` entries (ints allowed)."""
    def per_dim(v) -> tuple:
        t = tuple(v) if isinstance(v, (list, tuple)) else (v,)
        return t * spatial if len(t) == 1 else t
    return ConvArgs(per_dim(stride), per_dim(padding), per_dim(dilation), bool(transposed),
                    per_dim(output_padding), int(groups))


# --------------------------------------------------------------------------
# math modes, the split, and the tensor-core convolution (real on CUDA, emulated on CPU)
# --------------------------------------------------------------------------


@contextlib.contextmanager
def cudnn_tf32_scope(enabled: bool) -> Iterator[None]:
    """`torch.backends.cudnn.allow_tf32 = enabled` inside, restored after (PyTorch's default is True)."""
    flags = torch.backends.cudnn
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = flags.allow_tf32
        flags.allow_tf32 = enabled
    try:
        yield
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            flags.allow_tf32 = old


def truncate_tf32(x: torch.Tensor) -> torch.Tensor:
    """x with its 13 low mantissa bits cleared (what a TF32 tensor core reads), in x's layout."""
    return (x.view(torch.int32) & TF32_MASK).view(torch.float32)


def round_tf32(x: torch.Tensor) -> torch.Tensor:
    """x rounded to TF32 (10 mantissa bits), half away from zero, in x's layout; inf/nan kept, and a
    finite x that would round up past the largest finite fp32 is truncated instead."""
    r = (x.view(torch.int32) + TF32_HALF).bitwise_and_(TF32_MASK).view(torch.float32)
    finite = torch.isfinite(x)
    return torch.where(finite & torch.isfinite(r), r, torch.where(finite, truncate_tf32(x), x))


def split_tf32(x: torch.Tensor, rounding: str = "rn") -> tuple[torch.Tensor, torch.Tensor]:
    """(hi, lo): hi TF32-exact, lo = x - hi exactly (both fp32, in x's layout)."""
    if rounding not in ("rn", "trunc"):
        raise ValueError(f"rounding must be 'rn' or 'trunc', not {rounding!r}")
    hi = round_tf32(x) if rounding == "rn" else truncate_tf32(x)
    return hi, x - hi


def tc_conv(x: torch.Tensor, w: torch.Tensor, args: ConvArgs) -> torch.Tensor:
    """One TF32 tensor-core convolution (no bias). CUDA: cuDNN with allow_tf32 on for this call.
    CPU: emulated by truncating both operands to TF32 before an fp32 convolution."""
    if x.is_cuda:
        with cudnn_tf32_scope(True):
            return args.call(x, w)
    return args.call(truncate_tf32(x), truncate_tf32(w))


def fp32_conv(x: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor], args: ConvArgs) -> torch.Tensor:
    """cuDNN's IEEE fp32 convolution (TF32 off for this call): the accuracy reference."""
    with cudnn_tf32_scope(False):
        return args.call(x, w, bias)


def tf32_conv(x: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor], args: ConvArgs) -> torch.Tensor:
    """Plain TF32 (one tensor-core convolution; NOT fp32-accurate). CPU: emulated as in `tc_conv`."""
    r = tc_conv(x, w, args)
    return _add_bias(r, bias)


# --------------------------------------------------------------------------
# channels_last dispatch (exact fp32)
# --------------------------------------------------------------------------


def channels_last_format(ndim: int) -> Optional[torch.memory_format]:
    """The channels-last memory format for a tensor of `ndim` dims (None for Conv1d's 3)."""
    return {4: torch.channels_last, 5: torch.channels_last_3d}.get(ndim)


def is_channels_last(t: torch.Tensor) -> bool:
    fmt = channels_last_format(t.dim())
    return fmt is not None and t.is_contiguous(memory_format=fmt) and not t.is_contiguous()


def channels_last_conv(x: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor],
                       args: ConvArgs) -> torch.Tensor:
    """The same IEEE fp32 convolution on operands in channels_last (cuDNN's NHWC kernels)."""
    fmt = channels_last_format(x.dim())
    if fmt is not None:
        x, w = x.contiguous(memory_format=fmt), w.contiguous(memory_format=fmt)
    return fp32_conv(x, w, bias, args)


# --------------------------------------------------------------------------
# the 3xTF32 construction
# --------------------------------------------------------------------------


def taps(w: torch.Tensor) -> int:
    """Kernel taps per input channel: the reduction length one input channel adds to an output element
    (an upper bound for a transposed convolution, whose strides skip taps)."""
    return math.prod(w.shape[2:])


def channel_chunks(channels: int, n_taps: int, chunk: int) -> list[tuple[int, int]]:
    """[start, stop) ranges of a group's input channels, each with channels x taps <= chunk where a
    single channel allows it (else one channel per range), sizes balanced; chunk <= 0: one range."""
    if chunk <= 0 or channels * n_taps <= chunk:
        return [(0, channels)]
    per = max(1, chunk // n_taps)
    n = -(-channels // per)
    bounds = [round(i * channels / n) for i in range(n + 1)]
    return [(a, b) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def _gather_split(t: torch.Tensor, order: Sequence[str], axis: int, groups: int, start: int, stop: int,
                  rounding: str, memory_format: Optional[torch.memory_format]) -> torch.Tensor:
    """The TF32 parts (`order`: "hi"/"lo" each) of the channels [start, stop) of each group of t, stacked
    per group along `axis`: axis size groups·len(order)·(stop - start), group-major, so that a grouped
    convolution pairs each group's parts with the weight's. Split straight into place (no full-size
    hi/lo copies of t): the split is a memory-bound pass over the activation on every call."""
    cg = t.shape[axis] // groups
    width = stop - start
    shape = list(t.shape)
    shape[axis] = groups * len(order) * width
    if memory_format is not None:
        dst = torch.empty(shape, device=t.device, dtype=t.dtype, memory_format=memory_format)
    else:
        dst = torch.empty(shape, device=t.device, dtype=t.dtype)
    view = dst.unflatten(axis, (groups, len(order), width))
    src = t.unflatten(axis, (groups, cg)).narrow(axis + 1, start, width)
    slots = {p: [view.select(axis + 1, i) for i, q in enumerate(order) if q == p] for p in ("hi", "lo")}
    hi = round_tf32(src) if rounding == "rn" else truncate_tf32(src)
    for d in slots["hi"]:
        d.copy_(hi)
    for d in slots["lo"]:
        torch.sub(src, hi, out=d)
    return dst


@dataclass
class Split3Plan:
    """What one `split3_conv` call ran: layout, the per-group channel chunks, the longest reduction."""

    layout: str
    chunks: list
    max_reduction: int

    def describe(self) -> str:
        sizes = "+".join(str(b - a) for a, b in self.chunks)
        return (f"split3 ({self.layout}, input channels per group in {len(self.chunks)} chunk(s) {sizes}, "
                f"reduction <= {self.max_reduction} per TF32 convolution term)")


def split3_plan(x: torch.Tensor, w: torch.Tensor, args: ConvArgs, chunk: int = DEFAULT_CHUNK,
                layout: str = "concat") -> Split3Plan:
    cg = x.shape[1] // args.groups
    chunks = channel_chunks(cg, taps(w), chunk)
    return Split3Plan(layout, chunks, max(b - a for a, b in chunks) * taps(w))


def split3_conv(x: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor], args: ConvArgs, *,
                chunk: int = DEFAULT_CHUNK, layout: str = "concat", rounding: str = "rn",
                terms: Sequence[str] = ("lo_hi", "hi_lo", "hi_hi")) -> torch.Tensor:
    """3xTF32 convolution: per channel chunk the small terms first, then hi·hi; chunks added in fp32.

    `terms` (x part _ w part) exists to test the algebra: a construction missing a term must fail.
    """
    if x.dtype != torch.float32 or w.dtype != torch.float32:
        raise TypeError(f"split3_conv is for fp32 tensors, got {x.dtype} and {w.dtype}")
    if layout not in ("concat", "separate"):
        raise ValueError(f"layout must be 'concat' or 'separate', not {layout!r}")
    if rounding not in ("rn", "trunc"):
        raise ValueError(f"rounding must be 'rn' or 'trunc', not {rounding!r}")
    plan = split3_plan(x, w, args, chunk, layout)
    pairs = [tuple(t.split("_")) for t in terms]
    # weight's input-channel axis: 1 for a convolution ([C_out, C_in/g, k...], already per group),
    # 0 for a transposed one ([C_in, C_out/g, k...], groups along it)
    w_axis, w_groups = (0, args.groups) if args.transposed else (1, 1)
    fmt = channels_last_format(x.dim()) if is_channels_last(x) else None
    out: Optional[torch.Tensor] = None
    for a, b in plan.chunks:
        groups_of = [[pq for pq in pairs]] if layout == "concat" else [[pq] for pq in pairs]
        for some in groups_of:  # concat: one convolution of all terms; separate: one per term
            xs = _gather_split(x, [p for p, _ in some], 1, args.groups, a, b, rounding, fmt)
            ws = _gather_split(w, [q for _, q in some], w_axis, w_groups, a, b, rounding, fmt)
            r = tc_conv(xs, ws, args)
            out = r if out is None else out.add_(r)
    assert out is not None
    return _add_bias(out, bias)


def _add_bias(r: torch.Tensor, bias: Optional[torch.Tensor]) -> torch.Tensor:
    if bias is None:
        return r
    return r.add_(bias.to(r.dtype).view([1, -1] + [1] * (r.dim() - 2)))


# --------------------------------------------------------------------------
# the object a candidate calls in place of extern_kernels.convolution
# --------------------------------------------------------------------------


class ConvEmu:
    """`extern_kernels.convolution(...)`, computed by the construction METHOD
    (split3 | channels_last | tf32 | fp32), returned in the strides the module asserts."""

    def __init__(self, method: str, chunk: int = DEFAULT_CHUNK, layout: str = "concat"):
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, not {method!r}")
        self.method = method
        self.chunk = chunk
        self.layout = layout
        self.last_method: Optional[str] = None

    def compute(self, x: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor],
                args: ConvArgs) -> torch.Tensor:
        if self.method == "split3":
            self.last_method = split3_plan(x, w, args, self.chunk, self.layout).describe()
            return split3_conv(x, w, bias, args, chunk=self.chunk, layout=self.layout)
        self.last_method = self.method
        if self.method == "channels_last":
            return channels_last_conv(x, w, bias, args)
        if self.method == "tf32":
            return tf32_conv(x, w, bias, args)
        return fp32_conv(x, w, bias, args)

    def convolution(self, input, weight, bias=None, stride=(1,), padding=(0,), dilation=(1,), transposed=False,
                    output_padding=(0,), groups=1, out_stride=None):
        args = conv_args(input.dim() - 2, stride, padding, dilation, transposed, output_padding, groups)
        r = self.compute(input, weight, bias, args)
        if out_stride is None or tuple(r.stride()) == tuple(out_stride):
            return r
        # the epilogue kernels index the library call's output by the strides Inductor asserted for it
        out = torch.empty_strided(r.shape, tuple(out_stride), device=r.device, dtype=r.dtype)
        return out.copy_(r)


# --------------------------------------------------------------------------
# error measure (the one the benchmark and the tests use)
# --------------------------------------------------------------------------


def max_rel_error(c: torch.Tensor, ref64: torch.Tensor) -> float:
    """max|c - ref| / max|ref| with ref in float64."""
    den = ref64.abs().max().item()
    return (c.double() - ref64).abs().max().item() / (den if den else 1.0)
