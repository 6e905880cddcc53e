"""A transposed convolution as dense forward convolutions, one per output phase (sub-pixel decomposition).

A transposed convolution with stride s, padding p, dilation d, output_padding op writes

    y[o] = sum over (i, t) with o + p = i*s + t*d of  x[i] * w[t]        (per spatial dim)

Output positions of one phase φ = (o + p) mod s see only the taps t with t*d ≡ φ (mod s). Those
form an arithmetic progression t_j = t_0 + j*s/g (g = gcd(d, s)) whose input offsets i = q - m_j
step by D = d/g, so phase φ is a plain (forward, cross-correlation) convolution of x with the
flipped sub-kernel w[t_{J-1}], ..., w[t_0] at dilation D: no inserted zeros, every product a real
one, the FLOPs of the transposed convolution split exactly across the s^dims phases. Each phase runs
as cuDNN's forward convolution (`torch.convolution`) and its result is written into the strided
positions o = q*s + φ - p of the output; a phase with no taps (kernel smaller than the stride) is
zero (or the bias). The re-sliced weights are views of the live parameter taken at every call, so a
loaded state dict stays valid.

Precision: the forward convolutions run under the caller's math mode (`cudnn.allow_tf32`), the one the
baseline's transposed convolution ran under, and every output is a sum of the same products (in
another order): the candidate declares `KERNELOPT_PRECISION = "library"` (verify.precision).

`ConvTransposePhases.convolution` takes `extern_kernels.convolution`'s arguments and returns the
result in the strides the output module asserts. This file imports only torch, math and the standard
library: candidates embed it verbatim, so the deployed module needs no KernelOPT.
"""
from __future__ import annotations

import contextlib
import itertools
import math
from dataclasses import dataclass
from typing import Iterator, Optional

import torch


@dataclass(frozen=True)
class PhasePlan:
    """One spatial dim of one phase: which taps (in the forward kernel's order), its dilation, how the input is
    cropped or padded, and where its outputs go."""

    taps: tuple  # kernel indices, already flipped (the forward convolution's order)
    dilation: int
    crop_left: int  # input elements dropped at the start (a negative padding)
    crop_right: int
    pad: int  # the forward convolution's (symmetric) padding
    out_skip: int  # outputs of the forward convolution dropped at the start (asymmetric padding)
    count: int  # outputs of this phase
    first: int  # the first output position of this phase; then every `stride`-th


def plan_dim(size_in: int, kernel: int, stride: int, padding: int, dilation: int, output_padding: int,
             phase: int) -> Optional[PhasePlan]:
    """The plan of phase `phase` along one dim, or None when the phase has no output position."""
    size_out = (size_in - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1
    q0 = -((phase - padding) // stride)  # ceil((padding - phase) / stride)
    q1 = (size_out - 1 + padding - phase) // stride
    count = q1 - q0 + 1
    if count <= 0:
        return None
    taps = [t for t in range(kernel) if (t * dilation) % stride == phase]
    g = math.gcd(dilation, stride)
    step = dilation // g
    if not taps:
        return PhasePlan((), step, 0, 0, 0, 0, count, q0 * stride + phase - padding)
    m0 = (taps[0] * dilation - phase) // stride
    span = (len(taps) - 1) * step
    pad_left = m0 + span - q0
    pad_right = count - size_in - pad_left + span
    crop_left, crop_right = max(-pad_left, 0), max(-pad_right, 0)
    pl, pr = max(pad_left, 0), max(pad_right, 0)
    pad = max(pl, pr)
    return PhasePlan(tuple(reversed(taps)), step, crop_left, crop_right, pad, pad - pl, count,
                     q0 * stride + phase - padding)


def _per_dim(v, spatial: int) -> list:
    t = list(v) if isinstance(v, (list, tuple)) else [v]
    return [int(i) for i in (t * spatial if len(t) == 1 else t)]


def forward_weight(weight: torch.Tensor, groups: int) -> torch.Tensor:
    """A transposed convolution's weight (C_in, C_out/groups, k...) as a forward one's (C_out, C_in/groups, k...)."""
    c_in, c_out_g = weight.shape[:2]
    k = weight.shape[2:]
    w = weight.reshape(groups, c_in // groups, c_out_g, *k).transpose(1, 2)
    return w.reshape(groups * c_out_g, c_in // groups, *k)


@contextlib.contextmanager
def _benchmark(on: bool) -> Iterator[None]:
    flags = torch.backends.cudnn
    old = flags.benchmark, flags.benchmark_limit
    if on:
        flags.benchmark, flags.benchmark_limit = True, 0
    try:
        yield
    finally:
        flags.benchmark, flags.benchmark_limit = old


class ConvTransposePhases:
    """`extern_kernels.convolution(..., transposed=True, ...)` as one forward convolution per output phase.

    `benchmark`: each phase's cuDNN algorithm timed per shape (cuDNN benchmark mode) instead of the heuristic's.
    """

    def __init__(self, benchmark: bool = False) -> None:
        self.benchmark = benchmark
        self.last_method: Optional[str] = None

    def convolution(self, input, weight, bias=None, stride=(1,), padding=(0,), dilation=(1,), transposed=False,
                    output_padding=(0,), groups=1, out_stride=None, out=None):
        """aten.convolution's result with `out_stride`'s strides; written into `out` where given (the caller's
        buffer of a group whose epilogue writes in place: compiled/group_span.py), else a new tensor."""
        spatial = input.dim() - 2
        stride, padding = _per_dim(stride, spatial), _per_dim(padding, spatial)
        dilation, output_padding = _per_dim(dilation, spatial), _per_dim(output_padding, spatial)
        groups = int(groups)
        if not transposed:  # not ours to decompose: the call as it was
            r = torch.convolution(input, weight, bias, stride, padding, dilation, False, output_padding, groups)
            self.last_method = "forward convolution (not transposed): the library call unchanged"
            return out.copy_(r) if out is not None else _restride(r, out_stride)
        sizes = input.shape[2:]
        kernel = weight.shape[2:]
        out_sizes = [(sizes[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1)
                     + output_padding[i] + 1 for i in range(spatial)]
        c_out = weight.shape[1] * groups
        shape = (input.shape[0], c_out, *out_sizes)
        if out is not None and (tuple(out.shape) != shape or (out_stride is not None
                                                              and tuple(out.stride()) != tuple(out_stride))):
            raise ValueError(f"out is {tuple(out.shape)} with strides {tuple(out.stride())}, the convolution's "
                             f"result {shape} with strides {out_stride}")
        if out is None:
            out = (torch.empty_strided(shape, tuple(out_stride), device=input.device, dtype=input.dtype)
                   if out_stride is not None else torch.empty(shape, device=input.device, dtype=input.dtype))
        wf = forward_weight(weight, groups)
        phases = 0
        with _benchmark(self.benchmark and input.is_cuda):
            for phase in itertools.product(*(range(s) for s in stride)):
                plans = [plan_dim(sizes[i], kernel[i], stride[i], padding[i], dilation[i], output_padding[i],
                                  phase[i]) for i in range(spatial)]
                if any(p is None for p in plans):
                    continue
                dst = out[(slice(None), slice(None)) + tuple(
                    slice(p.first, p.first + (p.count - 1) * s + 1, s) for p, s in zip(plans, stride, strict=True))]
                if any(not p.taps or p.crop_left + p.crop_right >= sizes[i] for i, p in enumerate(plans)):
                    # no tap, or no input position, reaches this phase's outputs
                    if bias is None:
                        dst.zero_()
                    else:
                        dst.copy_(bias.reshape(1, -1, *([1] * spatial)).expand_as(dst))
                    continue
                x = input[(slice(None), slice(None)) + tuple(
                    slice(p.crop_left, sizes[i] - p.crop_right) for i, p in enumerate(plans))]
                # the taps, in the forward kernel's order, are a reversed arithmetic progression: one strided
                # view of the weight and one flip (a small copy) per phase
                w = wf[(slice(None), slice(None)) + tuple(
                    slice(p.taps[-1], p.taps[0] + 1, p.taps[0] - p.taps[1] if len(p.taps) > 1 else 1)
                    for p in plans)].flip(list(range(2, 2 + spatial)))
                y = torch.convolution(x, w, bias, [1] * spatial, [p.pad for p in plans], [p.dilation for p in plans],
                                      False, [0] * spatial, groups)
                y = y[(slice(None), slice(None)) + tuple(slice(p.out_skip, p.out_skip + p.count) for p in plans)]
                dst.copy_(y)
                phases += 1
        self.last_method = (f"{phases} forward convolution(s), one per output phase"
                            + (" (cuDNN benchmark mode)" if self.benchmark and input.is_cuda else "")
                            + ("" if input.is_cuda else " on the CPU (no cuDNN)"))
        return out


def _restride(r, out_stride):
    if out_stride is None or tuple(r.stride()) == tuple(out_stride):
        return r
    out = torch.empty_strided(r.shape, tuple(out_stride), device=r.device, dtype=r.dtype)
    return out.copy_(r)
