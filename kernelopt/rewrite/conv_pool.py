"""An average pool after a convolution, composed into one convolution.

`avgpool_{k2,s2}(conv_{w,s1,p1,d1}(x)) = conv_{w',s1·s2,p1}(x)` with `w' = (dilate_{d1}(w) ⊛ box_{k2,s1}) / k2`:
every pooled output averages `k2` conv outputs `s1` apart, each a window of the same zero-padded input, so
the average is one window of the input against the taps summed at their composed offsets. It holds when
every pool window lies inside the convolution's output — no pool padding (its zeros are not conv outputs),
no partial windows (`ceil_mode` that adds one), no `divisor_override` — and the pool covers all spatial dims.
The bias passes unchanged (an average of a constant). The composed taps are computed from `w` in the graph.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch.fx import Node

from kernelopt.rewrite.fx import args_of, aten, kwargs_of, numel, only_user, shape, val
from kernelopt.rewrite.match import Identity, Rewrite

POOLS = {aten.avg_pool1d.default: 1, aten.avg_pool2d.default: 2, aten.avg_pool3d.default: 3}


def pool_args(node: Node, n: int) -> tuple[list[int], list[int], list[int], bool, Optional[int]]:
    names = ("input", "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override")
    a = dict(zip(names, args_of(node), strict=False)) | dict(kwargs_of(node))

    def per_dim(v, default):
        v = default if v is None or v == [] else v
        v = [v] if isinstance(v, int) else list(v)
        return v * n if len(v) == 1 else v
    kernel = per_dim(a["kernel_size"], None)
    return (kernel, per_dim(a.get("stride"), kernel), per_dim(a.get("padding", 0), [0]),
            bool(a.get("ceil_mode", False)), a.get("divisor_override"))


def composed_taps(w: torch.Tensor, s1: list[int], d1: list[int], k2: list[int]) -> torch.Tensor:
    """`w` [C_out, C_in/g, K...] dilated by `d1` and box-summed over `k2` windows `s1` apart, divided by their
    number: the taps of the composed convolution (size d1·(K−1) + 1 + s1·(k2−1) per dim)."""
    for j in range(len(k2)):
        dim = 2 + j
        t = w.movedim(dim, -1)
        k = t.shape[-1]
        if d1[j] > 1:  # zeros between taps
            t = F.pad(t.unsqueeze(-1), (0, d1[j] - 1)).flatten(-2)[..., :d1[j] * (k - 1) + 1]
        span = (k2[j] - 1) * s1[j]
        padded = [F.pad(t, (i * s1[j], span - i * s1[j])) for i in range(k2[j])]
        t = padded[0]
        for p in padded[1:]:
            t = t + p
        w = t.movedim(-1, dim)
    return w / numel(k2)


def match(node: Node) -> Optional[Rewrite]:
    n = POOLS.get(node.target) if isinstance(node.target, torch._ops.OpOverload) else None
    if n is None or val(node) is None:
        return None
    y = args_of(node)[0]
    if not isinstance(y, Node) or y.target is not aten.convolution.default or only_user(y) is not node:
        return None
    x, w, bias, stride, padding, dilation, transposed, output_padding, groups = args_of(y)
    if transposed or len(shape(y)) != n + 2 or not val(y).is_floating_point():
        return None
    kernel, pstride, ppad, ceil_mode, divisor = pool_args(node, n)
    if any(ppad) or divisor is not None:
        return None  # pool padding averages zeros that are not conv outputs
    conv_out = shape(y)[2:]
    floor_out = [(conv_out[j] - kernel[j]) // pstride[j] + 1 for j in range(n)]
    if list(shape(node)[2:]) != floor_out:
        return None  # ceil_mode added a partial window
    k_sp = shape(w)[2:]
    kc = [dilation[j] * (k_sp[j] - 1) + 1 + stride[j] * (kernel[j] - 1) for j in range(n)]
    in_sp = shape(x)[2:]
    comp_out = [(in_sp[j] + 2 * padding[j] - kc[j]) // (stride[j] * pstride[j]) + 1 for j in range(n)]
    if comp_out != floor_out:
        return None
    if numel(kc) * numel(floor_out) >= numel(k_sp) * numel(conv_out):
        return None  # the composed convolution would do no less work
    new_stride = [stride[j] * pstride[j] for j in range(n)]

    def fn(x_: torch.Tensor, w_: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
        wc = composed_taps(w_, list(stride), list(dilation), kernel)
        return torch.ops.aten.convolution(x_, wc, rest[0] if rest else None, new_stride, list(padding), [1] * n,
                                          False, [0] * n, groups)

    inputs = [x, w] + ([bias] if bias is not None else [])
    return Rewrite("conv-avgpool-compose", f"{y.name} ({n}-D convolution, taps {list(k_sp)}, stride "
                   f"{list(stride)}) -> {node.name} (avg pool {kernel}/{pstride}): one convolution, taps {kc}, "
                   f"stride {new_stride}", node, inputs, fn)


IDENTITY = Identity(
    "conv-avgpool-compose",
    "avgpool_{k2,s2}(conv_{w,s1}(x)) = conv_{(dilate(w) ⊛ box_{k2,s1})/|k2|, s1·s2}(x)",
    "a (non-transposed) convolution with one user, an average pool over all its spatial dims with no "
    "padding, no divisor_override and no partial window, and fewer multiply-adds for the composed taps",
    match)
