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

from kernelopt.rewrite.conv_reduce import REDUCTIONS
from kernelopt.rewrite.fx import args_of, aten, kwargs_of, norm_dims, numel, only_user, shape, val
from kernelopt.rewrite.match import Identity, Rewrite, apply_scale, chain, linear_step


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
    steps, cur = chain(node, lambda user, c: linear_step(user, c))
    red = only_user(cur)
    if red is None or red.target not in REDUCTIONS or kwargs_of(red).get("dtype") is not None or len(args_of(red)) < 2:
        return None
    dims = norm_dims(args_of(red)[1], len(out))
    if 1 not in dims or 0 in dims:
        return None  # not over the channels, or over the batch too: not this identity
    keepdim = bool(args_of(red)[2]) if len(args_of(red)) > 2 else bool(kwargs_of(red).get("keepdim", False))
    spatial = [d for d in dims if d >= 2]
    count = numel([out[d] for d in dims])
    mean = red.target is aten.mean.dim
    final_shape = shape(red)
    node_operands = [s.operand for _, s in steps if isinstance(s.operand, Node)]

    def fn(x_: torch.Tensor, w_: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
        bias_, ops = (rest[0], rest[1:]) if bias is not None else (None, rest)
        y = torch.ops.aten.convolution(x_, summed_taps(w_, groups, transposed), None, stride, padding, dilation,
                                       transposed, output_padding, 1)
        if bias_ is not None:
            y = y + bias_.sum()
        if spatial:
            y = y.sum(spatial, keepdim=True)
        it = iter(ops)
        for _, s in steps:
            operand = next(it) if isinstance(s.operand, Node) else s.operand
            if s.op in ("add", "sub", "rsub"):
                summed = (torch.broadcast_to(operand, s.shape).sum(dims, keepdim=True)
                          if isinstance(operand, torch.Tensor) else operand * count)
                y = y + summed if s.op == "add" else y - summed if s.op == "sub" else summed - y
            else:
                y = apply_scale(s, y, operand)
        if mean:
            y = y / count
        return y.reshape(final_shape) if not keepdim else y

    inputs = [x, w] + ([bias] if bias is not None else []) + node_operands
    kind = "transposed convolution" if transposed else "convolution"
    return Rewrite("conv-channel-reduction", f"{node.name} ({nsp}-D {kind}, {out[1]} -> 1 output channels) -> "
                   f"{red.name} ({red.target} over dims {dims}, {len(steps)} linear step(s) between)", red, inputs, fn)


IDENTITY = Identity(
    "conv-channel-reduction",
    "Σ_o conv(x, w)[o] = conv(x, Σ_o w[o]) + Σ_o bias[o] (one output channel with the taps summed, per group)",
    "a convolution or transposed convolution (any stride, padding, dilation, output_padding, groups) whose "
    "output, and every value after it, has one user, followed by scalar multiplies/divides, negation and "
    "added terms not computed from it, then a sum or mean over the channels, and any spatial dims, not the batch "
    "(keepdim either way)",
    match)
