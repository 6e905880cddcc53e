"""A sum or mean of a convolution over its output channels, as one convolution with a single output channel.

`Σ_o conv(x, w)[o] = conv(x, Σ_o w[o]) + Σ_o bias[o]`: each output channel is a convolution of the input with its
own taps, linear in them, so the channels' sum is one convolution with the taps summed. With groups `g`, an output channel sees only its
group's input channels: the summed taps of each group stand side by side as the input channels of one
convolution with groups 1 (a transposed convolution's weight `[C_in, C_out/g, K...]` sums over its second dim,
which is that already). The reduced output is `C_out` times cheaper to compute than the convolution it replaces.
Spatial dims reduced together with the channels are summed after it (the spatial identity, conv_reduce, may then
take that sum over too). A chain of scalar multiplies/divides and added terms between the convolution and the
reduction is carried through (the reduction is linear). Any stride, padding, dilation, output_padding and groups;
1-D, 2-D, 3-D.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch.fx import Node

from kernelopt.rewrite.fx import args_of, aten, numel, shape, val
from kernelopt.rewrite.match import Identity, Rewrite, linear_chain_reduction


def summed_taps(w: torch.Tensor, groups: int, transposed: bool) -> torch.Tensor:
    """The weight of the one-output-channel convolution that computes the sum of `w`'s output channels."""
    if transposed:  # [C_in, C_out/g, K...]: each input channel feeds only its group's outputs
        return w.sum(1, keepdim=True)
    c_out, c_in_g, k = w.shape[0], w.shape[1], list(w.shape[2:])
    return w.reshape([groups, c_out // groups, c_in_g] + k).sum(1).reshape([1, groups * c_in_g] + k)


def match(node: Node) -> Optional[Rewrite]:
    if node.target is not aten.convolution.default or val(node) is None or not val(node).is_floating_point():
        return None
    x, w, bias, stride, padding, dilation, transposed, output_padding, groups = args_of(node)
    out = shape(node)
    nsp = len(out) - 2
    if nsp < 1 or len(shape(x)) != len(out) or out[1] < 2:
        return None
    cr = linear_chain_reduction(node)
    if cr is None or 1 not in cr.dims or 0 in cr.dims:
        return None  # not over the channels, or over the batch too: not this identity
    spatial = [d for d in cr.dims if d >= 2]
    count = numel([out[d] for d in cr.dims])

    def fn(x_: torch.Tensor, w_: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
        bias_, ops = (rest[0], rest[1:]) if bias is not None else (None, rest)
        y = torch.ops.aten.convolution(x_, summed_taps(w_, groups, transposed), None, stride, padding, dilation,
                                       transposed, output_padding, 1)
        if bias_ is not None:
            y = y + bias_.sum()
        return cr.finish(y.sum(spatial, keepdim=True) if spatial else y, ops, count)

    inputs = [x, w] + ([bias] if bias is not None else []) + cr.operands
    kind = "transposed convolution" if transposed else "convolution"
    return Rewrite("conv-channel-reduction", f"{node.name} ({nsp}-D {kind}, {out[1]} -> 1 output channels) -> "
                   f"{cr.red.name} ({cr.red.target} over dims {cr.dims}, {len(cr.steps)} linear step(s) between)",
                   cr.red, inputs, fn)


IDENTITY = Identity(
    "conv-channel-reduction",
    "Σ_o conv(x, w)[o] = conv(x, Σ_o w[o]) + Σ_o bias[o] (one output channel with the taps summed, per group)",
    "a convolution or transposed convolution (any stride, padding, dilation, output_padding, groups) whose "
    "output, and every value after it, has one user, followed by scalar multiplies/divides, negation and "
    "added terms not computed from it, then a sum or mean over the channels, and any spatial dims, not the batch "
    "(keepdim either way)",
    match)
