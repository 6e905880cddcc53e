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

from typing import Optional

import torch
from torch.fx import Node

from kernelopt.rewrite.fx import args_of, aten, numel, shape, val
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


# On an H100 the one-output-channel convolution of this identity ran at 0.60x of the 128-channel convolution it
# replaced, for 1/128 of its FLOPs (benchmarks/results/2026-12-07-h100-rewrites-networks): cuDNN runs a single output
# channel off the tensor cores. The summed taps are therefore channel 0 of a convolution PADDED_OUT channels wide,
# the rest zero taps, a width tensor-core kernels take (Inductor's max-autotune times its candidates for that
# shape); only channel 0 is read. Where the convolution has fewer than twice that many channels, one is computed.
# The padded form is not yet measured.
PADDED_OUT = 8


def padded(taps: torch.Tensor, width: int, transposed: bool) -> torch.Tensor:
    """One output channel's taps as the first of `width` (the others zero): [1, C, K...], or [C_in, 1, K...]."""
    if width == 1:
        return taps
    dim = 1 if transposed else 0
    zeros = list(taps.shape)
    zeros[dim] = width - 1
    return torch.cat([taps, taps.new_zeros(zeros)], dim)


def match(node: Node) -> Optional[Rewrite]:
    if node.target is not aten.convolution.default or val(node) is None or not val(node).is_floating_point():
        return None
    x, w, bias, stride, padding, dilation, transposed, output_padding, groups = args_of(node)
    out = shape(node)
    nsp = len(out) - 2
    if nsp < 1 or len(shape(x)) != len(out) or out[1] < 2:
        return None
    cr = linear_chain_reduction(node, fold=frozenset({1}))
    if cr is None or 1 not in cr.dims or 0 in cr.dims:
        return None  # not over the channels, or over the batch too: not this identity
    spatial = [d for d in cr.dims if d >= 2]
    count = numel([out[d] for d in cr.dims])
    width = PADDED_OUT if out[1] >= 2 * PADDED_OUT else 1

    def fn(x_: torch.Tensor, w_: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
        bias_, ops = (rest[0], rest[1:]) if bias is not None else (None, rest)
        a = per_channel(cr.affine(ops)[0], out[1], len(out), w_)
        taps = padded(summed_taps(w_, groups, transposed, a), width, transposed)
        y = torch.ops.aten.convolution(x_, taps, None, stride, padding, dilation, transposed, output_padding, 1)
        y = y.narrow(1, 0, 1)
        if bias_ is not None:
            y = y + (bias_ * a).sum()
        return cr.finish(y.sum(spatial, keepdim=True) if spatial else y, ops, count, scaled=True)

    inputs = [x, w] + ([bias] if bias is not None else []) + cr.operands
    kind = "transposed convolution" if transposed else "convolution"
    computed = f", computed {width} wide" if width > 1 else ""
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
