"""A sum or mean of a convolution over spatial dims, computed from window sums of its input.

`Σ_o conv(x, w)[o] = Σ_k w[k] · Σ_{i ∈ I_k} x[i]`: each tap `k` meets, over all output positions `o`, the
input positions `I_k` — an arithmetic progression (stride `s`, offset `k·d − p`) clipped to the input, the
clipping being exactly the zero padding (and, for a transposed convolution, the cropping of `padding` and
`output_padding`). So the reduced output is the taps contracted with per-tap sums of input slices, plus the
bias times the number of positions. Where only some spatial dims are reduced (a mean over depth), their taps
become input channels of a convolution over the dims kept, with the kept dims' stride/padding/dilation.
A chain of multiplies/divides by scalars or by tensors constant along the reduced dims (per-channel, say) and
added terms between the convolution and the reduction is carried through (the reduction is linear). Any stride,
padding, dilation, output_padding and groups; 1-D, 2-D, 3-D.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch.fx import Node

from kernelopt.rewrite.fx import ceil_div, float_convolution, numel, shape
from kernelopt.rewrite.match import Identity, Rewrite, linear_chain_reduction


def tap_slices(l_in: int, l_out: int, k: int, s: int, p: int, d: int, transposed: bool) -> list[slice]:
    """For each tap of one spatial dim, the input positions it meets over all output positions."""
    out = []
    for t in range(k):
        off = t * d - p
        if not transposed:  # input i = o*s + off, o in [0, l_out)
            o0 = max(0, ceil_div(-off, s))
            o1 = min(l_out - 1, (l_in - 1 - off) // s)
            out.append(slice(o0 * s + off, o1 * s + off + 1, s) if o0 <= o1 else slice(0, 0, 1))
        else:  # output o = i*s + off must lie in [0, l_out)
            i0 = max(0, ceil_div(-off, s))
            i1 = min(l_in - 1, (l_out - 1 - off) // s)
            out.append(slice(i0, i1 + 1, 1) if i0 <= i1 else slice(0, 0, 1))
    return out


def tap_sums(t: torch.Tensor, dim: int, slices: list[slice]) -> torch.Tensor:
    """For each tap, the sum of `t` over that tap's positions along `dim` (a strided slice); the taps as a new
    last dim. Each tap reads its slice: the input is read about once per tap along `dim` (measured on an H100,
    benchmarks/results/2026-12-06-h100-graph-rewrites: a stride-2 3x3 convolution's global mean ran 1.22x, most
    of its time these reads)."""
    return torch.stack([t[(slice(None),) * dim + (sl,)].sum(dim) for sl in slices], dim=-1)


def match(node: Node) -> Optional[Rewrite]:
    conv = float_convolution(node)
    if conv is None:
        return None
    x, w, bias, stride, padding, dilation, transposed, output_padding, groups = conv
    out = shape(node)
    nsp = len(out) - 2
    if nsp < 1 or len(shape(x)) != len(out):
        return None
    cr = linear_chain_reduction(node)
    if cr is None:
        return None
    dims = cr.dims
    if not dims or min(dims) < 2:
        return None  # a reduction over the batch or the channels: not this identity
    reduced = [d - 2 for d in dims]
    kept = [j for j in range(nsp) if j not in reduced]
    in_sp, k_sp = shape(x)[2:], shape(w)[2:]
    slices = {j: tap_slices(in_sp[j], out[2 + j], k_sp[j], stride[j], padding[j], dilation[j], transposed)
              for j in reduced}
    count = numel([out[2 + j] for j in reduced])
    batch, c_out = out[0], out[1]
    c_in = shape(x)[1]
    kd = [k_sp[j] for j in reduced]
    keep_shape = [batch, c_out] + [1 if j in reduced else out[2 + j] for j in range(nsp)]

    def fn(x_: torch.Tensor, w_: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
        bias_, ops = (rest[0], rest[1:]) if bias is not None else (None, rest)
        t = x_
        for j in sorted(reduced, reverse=True):  # taps appended last: [B, C, kept..., K_last, ..., K_first]
            t = tap_sums(t, 2 + j, slices[j])
        nk = len(reduced)
        t = t.permute(list(range(2 + len(kept))) + [2 + len(kept) + nk - 1 - i for i in range(nk)])
        g = groups
        if not kept:
            t = t.reshape(batch, g, c_in // g, numel(kd))
            if transposed:
                wr = w_.reshape(g, c_in // g, c_out // g, numel(kd))
                y = torch.einsum("bgck,gcok->bgo", t, wr)
            else:
                wr = w_.reshape(g, c_out // g, c_in // g, numel(kd))
                y = torch.einsum("bgck,gock->bgo", t, wr)
            y = y.reshape(batch, c_out)
        else:
            # taps of the reduced dims become input channels (channel-major, so groups stay contiguous)
            t = t.permute([0, 1] + list(range(2 + len(kept), 2 + len(kept) + nk)) + list(range(2, 2 + len(kept))))
            t = t.reshape([batch, c_in * numel(kd)] + [in_sp[j] for j in kept])
            red_dims = [2 + j for j in reduced]
            kept_dims = [2 + j for j in kept]
            if transposed:  # [C_in, C_out/g, K...] -> [C_in * K_red, C_out/g, K_kept...]
                wr = w_.permute([0] + red_dims + [1] + kept_dims)
                wr = wr.reshape([c_in * numel(kd), c_out // g] + [k_sp[j] for j in kept])
            else:  # [C_out, C_in/g, K...] -> [C_out, C_in/g * K_red, K_kept...]
                wr = w_.permute([0, 1] + red_dims + kept_dims)
                wr = wr.reshape([c_out, c_in // g * numel(kd)] + [k_sp[j] for j in kept])
            y = torch.ops.aten.convolution(t, wr, None, [stride[j] for j in kept], [padding[j] for j in kept],
                                           [dilation[j] for j in kept], transposed,
                                           [output_padding[j] for j in kept] if transposed else [0] * len(kept), g)
        if bias_ is not None:
            y = y + (bias_ * count).reshape([1, c_out] + [1] * (y.dim() - 2))
        return cr.finish(y.reshape(keep_shape), ops, count)

    inputs = [x, w] + ([bias] if bias is not None else []) + cr.operands
    kind = "transposed convolution" if transposed else "convolution"
    return Rewrite("conv-spatial-reduction", f"{node.name} ({nsp}-D {kind}) -> {cr.red.name} ({cr.red.target} over "
                   f"spatial dims {[d - 2 for d in dims]}, {len(cr.steps)} linear step(s) between)", cr.red, inputs, fn)


IDENTITY = Identity(
    "conv-spatial-reduction",
    "Σ_o conv(x, w)[o] = Σ_k w[k] · Σ_{i ∈ I_k} x[i] + |O| · bias (taps against window sums of the input)",
    "a convolution or transposed convolution (any stride, padding, dilation, output_padding, groups) whose "
    "output, and every value after it, has one user, followed by multiplies/divides by scalars or by tensors "
    "constant along the reduced dims, negation and added terms not computed from it, then a sum or mean over "
    "spatial dims only (keepdim either way)",
    match)
