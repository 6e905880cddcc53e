"""A sum or mean of a convolution over its output channels, as one convolution with a single output channel.

`Σ_o conv(x, w)[o] = conv(x, Σ_o w[o]) + Σ_o bias[o]`: each output channel is a convolution of the input with its
own taps, linear in them, so the channels' sum is one convolution with the taps summed. With groups `g`, an output channel sees only its
group's input channels: the summed taps of each group stand side by side as the input channels of one
convolution with groups 1 (a transposed convolution's weight `[C_in, C_out/g, K...]` sums over its second dim,
which is that already). The reduced output is `C_out` times cheaper to compute than the convolution it replaces.
Spatial dims reduced together with the channels are summed after it (the spatial identity, conv_reduce, may then
take that sum over too). A chain of multiplies/divides by scalars or per-channel tensors and added terms between
the convolution and the reduction is carried through (the reduction is linear): with the chain's scale `a_o`,
`Σ_o a_o conv(x, w)[o] = conv(x, Σ_o a_o w[o]) + Σ_o a_o bias[o]`. Any stride, padding, dilation, output_padding
and groups; 1-D, 2-D, 3-D.
"""
from __future__ import annotations

import itertools
from typing import Optional

import torch
import torch.nn.functional as F
from torch.fx import Node

from kernelopt.rewrite.fx import float_convolution, numel, shape
from kernelopt.rewrite.match import Identity, Rewrite, linear_chain_reduction


def summed_taps(w: torch.Tensor, groups: int, transposed: bool, a: torch.Tensor) -> torch.Tensor:
    """The weight of the one-output-channel convolution that computes the sum of `w`'s output channels, each
    scaled by its entry of `a` (one per output channel)."""
    k = list(w.shape[2:])
    ones = [1] * len(k)
    if transposed:  # [C_in, C_out/g, K...]: each input channel feeds only its group's outputs
        c_in, c_out_g = w.shape[0], w.shape[1]
        scaled = w.reshape([groups, c_in // groups, c_out_g] + k) * a.reshape([groups, 1, c_out_g] + ones)
        return scaled.reshape([c_in, c_out_g] + k).sum(1, keepdim=True)
    c_out, c_in_g = w.shape[0], w.shape[1]
    scaled = w * a.reshape([c_out, 1] + ones)
    return scaled.reshape([groups, c_out // groups, c_in_g] + k).sum(1).reshape([1, groups * c_in_g] + k)


def per_channel(a: object, c_out: int, rank: int, like: torch.Tensor) -> torch.Tensor:
    """The chain's scale (a number, or a tensor broadcasting into the rank-`rank` output and varying along its
    channels alone) as one entry per output channel."""
    if not isinstance(a, torch.Tensor):
        return like.new_full((c_out,), float(a))  # type: ignore[arg-type]
    a = a.reshape([1] * (rank - a.dim()) + list(a.shape))
    return a.expand([1, c_out] + [1] * (rank - 2)).reshape(c_out)


# How the one output channel is computed. On an H100 (benchmarks/results/2026-12-07-h100-rewrites-networks, a 3x3
# convolution 64 -> 128 channels on 16x64x128x128 fp32) the rewritten model ran 0.60x of the baseline: Inductor's
# max-autotune timed cuDNN's one-channel convolution above 0.79 ms and its best Triton template (16 wide, IEEE fp32)
# at 0.33 ms, against 0.13 ms for cuDNN's 128-channel TF32 call. A single output channel is 2 * taps * C_in FLOPs
# per output position with no reuse for a tensor core, so a forward convolution with few taps is written out as
# the sum over its taps of shifted input slices times the tap, reduced over the channels: Inductor fuses it into
# one reduction kernel that reads the input once from memory, in IEEE fp32 (no lower than the baseline's TF32).
# Otherwise (a transposed convolution, or more taps) the summed taps are channel 0 of a convolution PADDED_OUT wide,
# the rest zero taps, a width tensor-core kernels take. Neither form is measured yet.
DIRECT_MAX_TAPS = 27
PADDED_OUT = 8


def direct(x: torch.Tensor, taps: torch.Tensor, stride: list[int], padding: list[int], dilation: list[int],
           out_sp: list[int]) -> torch.Tensor:
    """`conv(x, taps)` for one output channel (`taps` [1, C_in, K...], groups 1): Σ_k x_pad[window k] · taps[k],
    summed over the input channels ([B, 1, out_sp...])."""
    nsp = len(out_sp)
    pads = [p for j in reversed(range(nsp)) for p in (padding[j], padding[j])]
    xp = F.pad(x, pads) if any(padding) else x
    acc: Optional[torch.Tensor] = None
    for k in itertools.product(*[range(n) for n in taps.shape[2:]]):
        window = tuple(slice(t * d, t * d + (n - 1) * s + 1, s)
                       for t, d, s, n in zip(k, dilation, stride, out_sp, strict=True))
        term = xp[(slice(None), slice(None)) + window] * taps[(0, slice(None)) + k].reshape([1, -1] + [1] * nsp)
        acc = term if acc is None else acc + term
    assert acc is not None
    return acc.sum(1, keepdim=True)


def padded(taps: torch.Tensor, width: int, transposed: bool) -> torch.Tensor:
    """One output channel's taps as the first of `width` (the others zero): [1, C, K...], or [C_in, 1, K...]."""
    if width == 1:
        return taps
    dim = 1 if transposed else 0
    zeros = list(taps.shape)
    zeros[dim] = width - 1
    return torch.cat([taps, taps.new_zeros(zeros)], dim)


def match(node: Node) -> Optional[Rewrite]:
    conv = float_convolution(node)
    if conv is None:
        return None
    x, w, bias, stride, padding, dilation, transposed, output_padding, groups = conv
    out = shape(node)
    nsp = len(out) - 2
    if nsp < 1 or len(shape(x)) != len(out) or out[1] < 2:
        return None
    cr = linear_chain_reduction(node, fold=frozenset({1}))
    if cr is None or 1 not in cr.dims or 0 in cr.dims:
        return None  # not over the channels, or over the batch too: not this identity
    spatial = [d for d in cr.dims if d >= 2]
    count = numel([out[d] for d in cr.dims])
    by_taps = not transposed and numel(shape(w)[2:]) <= DIRECT_MAX_TAPS
    width = 1 if by_taps or out[1] < 2 * PADDED_OUT else PADDED_OUT

    def fn(x_: torch.Tensor, w_: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
        bias_, ops = (rest[0], rest[1:]) if bias is not None else (None, rest)
        a = per_channel(cr.affine(ops)[0], out[1], len(out), w_)
        taps = summed_taps(w_, groups, transposed, a)
        if by_taps:
            y = direct(x_, taps, stride, padding, dilation, list(out[2:]))
        else:
            y = torch.ops.aten.convolution(x_, padded(taps, width, transposed), None, stride, padding, dilation,
                                           transposed, output_padding, 1).narrow(1, 0, 1)
        if bias_ is not None:
            y = y + (bias_ * a).sum()
        return cr.finish(y.sum(spatial, keepdim=True) if spatial else y, ops, count, scaled=True)

    inputs = [x, w] + ([bias] if bias is not None else []) + cr.operands
    kind = "transposed convolution" if transposed else "convolution"
    computed = (f", {numel(shape(w)[2:])} taps summed over the input channels" if by_taps else
                f", computed {width} wide" if width > 1 else "")
    return Rewrite("conv-channel-reduction", f"{node.name} ({nsp}-D {kind}, {out[1]} -> 1 output channels{computed}) -> "
                   f"{cr.red.name} ({cr.red.target} over dims {cr.dims}, {len(cr.steps)} linear step(s) between)",
                   cr.red, inputs, fn)


IDENTITY = Identity(
    "conv-channel-reduction",
    "Σ_o a_o conv(x, w)[o] = conv(x, Σ_o a_o w[o]) + Σ_o a_o bias[o] (one output channel with the taps summed, "
    "per group; a_o the chain's scale)",
    "a convolution or transposed convolution (any stride, padding, dilation, output_padding, groups) whose "
    "output, and every value after it, has one user, followed by multiplies/divides by scalars or per-channel "
    "tensors, negation and added terms not computed from it, then a sum or mean over the channels, and any "
    "spatial dims, not the batch (keepdim either way)",
    match)
