"""An average pool after a transposed convolution, composed into one (forward) convolution of its input.

Per spatial dim, a transposed convolution (stride `s`, dilation `d`, padding `p`, taps `w[k]`) puts
`x[i]·w[k]` at output position `i·s + k·d − p`; an average pool (kernel `K2`, stride `S2`) averages positions
`o·S2 + j`, `0 ≤ j < K2`. Where `S2 = m·s`, input `i` meets pool output `o` through taps `k` with
`0 ≤ k·d − p − t·s < K2`, `t = o·m − i`, so

    z[o] = Σ_t x[o·m − t] · W'[t],   W'[t] = (1/K2) Σ_k w[k] · [0 ≤ k·d − p − t·s < K2]

— a forward convolution of `x` with stride `m` and the taps `W'` reversed, `x` zero-padded (or cropped) so that
it yields exactly the pool's outputs. It holds for any padding, dilation, output_padding and groups of the
transposed convolution, when every pool window lies inside its output (no pool padding, no partial window, no
`divisor_override`) and the pool covers all spatial dims; scalar multiplies/divides between the two pass
through, and so does the bias (an average of a constant). Instead of `s^n` times the input's positions, each
computed from every tap and then averaged, the composed convolution computes only the pool's outputs.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch.fx import Node

from kernelopt.rewrite.conv_pool import POOLS, pool_args
from kernelopt.rewrite.fx import args_of, ceil_div, float_convolution, numel, only_user, shape, val
from kernelopt.rewrite.match import Identity, Rewrite, Step, apply_scale, chain, linear_step


def tap_ranges(k: int, s: int, d: int, p: int, k2: int) -> tuple[list[tuple[int, int]], int]:
    """For one spatial dim: per tap u of the composed convolution (offset t = P − u), the taps [lo, hi) of the
    transposed convolution that land in the pool window (a run of consecutive taps, possibly empty), and the
    left padding P = t_max."""
    t_max = ((k - 1) * d - p) // s
    t_min = ceil_div(-p - k2 + 1, s)
    ranges = []
    for u in range(t_max - t_min + 1):
        t = t_max - u  # taps kk with 0 <= kk*d - p - t*s < k2
        lo, hi = max(0, ceil_div(p + t * s, d)), min(k, (p + t * s + k2 - 1) // d + 1)
        ranges.append((lo, max(lo, hi)))
    return ranges, t_max


def composed_weight(w: torch.Tensor, ranges: list[list[tuple[int, int]]], groups: int,
                    k2: list[int]) -> torch.Tensor:
    """The transposed convolution's weight [C_in, C_out/g, K...] with each dim's taps summed over its ranges,
    laid out as a forward convolution's [C_out, C_in/g, U...], divided by the pool's window size."""
    for j, per_u in enumerate(ranges):
        dim = 2 + j
        w = torch.cat([w.narrow(dim, lo, 1) if hi - lo == 1 else w.narrow(dim, lo, hi - lo).sum(dim, keepdim=True)
                       if hi > lo else torch.zeros_like(w.narrow(dim, 0, 1)) for lo, hi in per_u], dim)
    c_in, c_out_g, u = w.shape[0], w.shape[1], list(w.shape[2:])
    w = w.reshape([groups, c_in // groups, c_out_g] + u).transpose(1, 2).reshape([groups * c_out_g, c_in // groups] + u)
    return w / numel(k2)


def _scale_step(user: Node, cur: Node) -> Optional[Step]:
    step = linear_step(user, cur)
    return step if step is not None and step.op in ("mul", "div", "neg") else None


def match(node: Node) -> Optional[Rewrite]:
    conv = float_convolution(node)
    if conv is None:
        return None
    x, w, bias, stride, padding, dilation, transposed, output_padding, groups = conv
    if not transposed:
        return None
    steps, cur = chain(node, _scale_step)
    pool = only_user(cur)
    n = POOLS.get(pool.target) if pool is not None and isinstance(pool.target, torch._ops.OpOverload) else None
    if pool is None or n is None or val(pool) is None or len(shape(node)) != n + 2 or args_of(pool)[0] is not cur:
        return None
    kernel, pstride, ppad, ceil_mode, divisor = pool_args(pool, n)
    if any(ppad) or divisor is not None:
        return None  # pool padding averages zeros that are not outputs of the convolution
    conv_out, in_sp, k_sp = shape(node)[2:], shape(x)[2:], shape(w)[2:]
    pool_out = [(conv_out[j] - kernel[j]) // pstride[j] + 1 for j in range(n)]
    if list(shape(pool)[2:]) != pool_out:
        return None  # ceil_mode added a partial window
    if any(pstride[j] % stride[j] for j in range(n)):
        return None  # phases of the transposed convolution the pool does not mix evenly: no single convolution
    m = [pstride[j] // stride[j] for j in range(n)]
    ranges, lefts = zip(*(tap_ranges(k_sp[j], stride[j], dilation[j], padding[j], kernel[j]) for j in range(n)),
                        strict=True)
    u_sp = [len(r) for r in ranges]
    if not all(u_sp) or numel(u_sp) * numel(pool_out) >= numel(k_sp) * numel(in_sp):
        return None  # the composed convolution would do no less work
    # x padded (negative: cropped) so that the stride-m convolution yields exactly the pool's outputs
    pads = [(lefts[j], (pool_out[j] - 1) * m[j] + u_sp[j] - in_sp[j] - lefts[j]) for j in range(n)]
    flat_pad = [v for j in reversed(range(n)) for v in pads[j]]  # F.pad: the last dim first
    node_operands = [s.operand for _, s in steps if isinstance(s.operand, Node)]

    def fn(x_: torch.Tensor, w_: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
        bias_, ops = (rest[0], rest[1:]) if bias is not None else (None, rest)
        wc = composed_weight(w_, list(ranges), groups, kernel)
        y = torch.ops.aten.convolution(F.pad(x_, flat_pad), wc, bias_, m, [0] * n, [1] * n, False, [0] * n, groups)
        it = iter(ops)
        for _, s in steps:
            y = apply_scale(s, y, next(it) if isinstance(s.operand, Node) else s.operand)
        return y

    inputs = [x, w] + ([bias] if bias is not None else []) + node_operands
    return Rewrite("convtranspose-avgpool-compose",
                   f"{node.name} ({n}-D transposed convolution, taps {list(k_sp)}, stride {list(stride)}) -> "
                   f"{pool.name} (avg pool {kernel}/{pstride}): one convolution of its input, taps {u_sp}, stride {m}",
                   pool, inputs, fn)


IDENTITY = Identity(
    "convtranspose-avgpool-compose",
    "avgpool_{K2,m·s}(convT_{w,s,d,p}(x))[o] = Σ_t x[o·m − t] · (1/K2) Σ_k w[k]·[0 ≤ k·d − p − t·s < K2]",
    "a transposed convolution (any padding, dilation, output_padding, groups), scalar multiplies/divides, "
    "each value with one user, then an average pool over all its spatial dims whose stride is a multiple of "
    "the convolution's, with no padding, no divisor_override and no partial window, and fewer multiply-adds "
    "for the composed convolution",
    match)
