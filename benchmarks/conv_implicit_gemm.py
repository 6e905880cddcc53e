"""A 2-D convolution as an implicit GEMM in Triton, with emulated-fp32 tensor-core products.

`aten.convolution` (forward, not transposed; any stride, padding, dilation, groups) is the GEMM

    y[m, k] = sum_t A[m, t] * B[t, k]      m = (n, p, q) output pixels, k = output channels,
                                            t = (r, s, c) kernel taps x input channels of k's group

with A gathered from the input on the fly (no im2col buffer) and B read from the weight. Both are
read through their strides, so the input may be NCHW (what a model is called with) or channels-last
(what Inductor hands cuDNN after its layout copy): a kernel reading NCHW has no copy to pay. The
products are `tl.dot(..., input_precision=P)`: ``bf16x3`` (each fp32 operand split in registers into two
bf16 parts, three products, fp32 accumulation: ~2^-16 relative per product, between IEEE fp32 and
TF32), ``tf32x3`` (three TF32 products), ``tf32`` (plain TF32, what cuDNN runs by PyTorch's default;
never fp32-accurate) or ``ieee`` (fp32 FMA; the CPU interpreter computes every dot this way and rejects
the split precisions).

Why it exists: issue 27 asks whether an fp32-accurate tensor-core convolution can beat the baseline's
cuDNN TF32 call under `strict`. `benchmarks/conv_fp32.py` times these constructions against cuDNN on
every convolution of the suite; no generator proposes them (docs/architecture.md, Generator registry).

This file imports only torch, triton and the standard library: benchmarks/conv_fp32.py imports it on a
bare GPU box.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import torch
import triton
import triton.language as tl

PRECISIONS = ("bf16x3", "tf32x3", "tf32", "ieee")


@dataclass(frozen=True)
class TileConfig:
    block_m: int = 128  # output pixels per program
    block_n: int = 64  # output channels per program
    block_c: int = 32  # input channels per reduction step
    num_warps: int = 4
    num_stages: int = 3
    group_m: int = 8  # programs sharing a weight tile run together (L2 reuse of the input rows)

    def label(self) -> str:
        return f"{self.block_m}x{self.block_n}x{self.block_c}w{self.num_warps}s{self.num_stages}"


#: the tile configurations a benchmark tries per shape (the fastest is kept); the interpreter takes the first
CONFIGS = (
    TileConfig(128, 64, 32, 4, 3),
    TileConfig(128, 128, 32, 8, 3),
    TileConfig(128, 64, 64, 4, 3),
    TileConfig(64, 64, 32, 4, 4),
    TileConfig(256, 64, 32, 8, 3),
    TileConfig(128, 32, 32, 4, 4),
)


@triton.jit
def _conv2d_kernel(
    x, w, bias, y,
    N, H, W, P, Q, CG, KG,
    sxn, sxc, sxh, sxw,
    swk, swc, swr, sws,
    syn, syk, syp, syq,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    R: tl.constexpr, S: tl.constexpr, HAS_BIAS: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr, GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    g = tl.program_id(1)  # the convolution group
    M = N * P * Q
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(KG, BLOCK_N)
    # grouped ordering: GROUP_M row blocks sweep every column block before moving on
    per_group = GROUP_M * num_n
    first_m = (pid // per_group) * GROUP_M
    rows = tl.minimum(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % rows
    pid_n = (pid % per_group) // rows

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    mask_m = offs_m < M
    n = (offs_m // (P * Q)).to(tl.int64)
    pq = offs_m % (P * Q)
    p = pq // Q
    q = pq % Q
    offs_k = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_k = offs_k < KG
    kk = (g * KG + offs_k).to(tl.int64)
    offs_c = tl.arange(0, BLOCK_C)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    c_steps = tl.cdiv(CG, BLOCK_C)
    # one runtime loop over (tap, channel chunk), so the compiler pipelines the loads across taps
    for t in range(0, R * S * c_steps):
        rs = t // c_steps
        c0 = (t % c_steps) * BLOCK_C
        r = rs // S
        s = rs % S
        ih = p * stride_h - pad_h + r * dil_h
        iw = q * stride_w - pad_w + s * dil_w
        ok = mask_m & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        cc = c0 + offs_c
        mc = cc < CG
        a_ptr = x + (n * sxn + ih.to(tl.int64) * sxh + iw.to(tl.int64) * sxw)[:, None] \
            + ((g * CG + cc).to(tl.int64) * sxc)[None, :]
        a = tl.load(a_ptr, mask=ok[:, None] & mc[None, :], other=0.0)
        b_ptr = w + (kk * swk)[None, :] + (cc.to(tl.int64) * swc)[:, None] + r * swr + s * sws
        b = tl.load(b_ptr, mask=mc[:, None] & mask_k[None, :], other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)

    if HAS_BIAS:
        acc += tl.load(bias + kk, mask=mask_k, other=0.0)[None, :]
    y_ptr = y + (n * syn + p.to(tl.int64) * syp + q.to(tl.int64) * syq)[:, None] + (kk * syk)[None, :]
    tl.store(y_ptr, acc, mask=mask_m[:, None] & mask_k[None, :])


def applies(x: torch.Tensor, w: torch.Tensor, transposed: bool) -> Optional[str]:
    """None where the kernel computes this convolution, else why not."""
    if transposed:
        return "transposed convolution (the implicit GEMM here is the forward one)"
    if x.dim() != 4 or w.dim() != 4:
        return f"{x.dim() - 2}-D convolution (the kernel is 2-D)"
    if x.dtype != torch.float32 or w.dtype != torch.float32:
        return f"{x.dtype} operands (the kernel splits fp32)"
    return None


def conv2d(x: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor], stride: Sequence[int],
           padding: Sequence[int], dilation: Sequence[int], groups: int, precision: str = "bf16x3",
           config: TileConfig = CONFIGS[0], channels_last_out: bool = True) -> torch.Tensor:
    """`aten.convolution(x, w, bias, stride, padding, dilation, False, (0, 0), groups)` in fp32 data, the
    products at `precision`; x and w in any strides; the result channels-last (cuDNN's layout for
    channels-last operands) or NCHW."""
    why = applies(x, w, False)
    if why is not None:
        raise ValueError(f"conv_implicit_gemm: {why}")
    if precision not in PRECISIONS:
        raise ValueError(f"conv_implicit_gemm: precision {precision!r} is none of {PRECISIONS}")
    if x.device.type == "cpu":
        precision = "ieee"  # the interpreter computes every dot in fp32 and rejects the split precisions
    n, c, h, wd = x.shape
    k, cg, r, s = w.shape
    if c != cg * groups or k % groups:
        raise ValueError(f"conv_implicit_gemm: {c} input channels, weight {tuple(w.shape)}, groups {groups}")
    p = (h + 2 * padding[0] - dilation[0] * (r - 1) - 1) // stride[0] + 1
    q = (wd + 2 * padding[1] - dilation[1] * (s - 1) - 1) // stride[1] + 1
    fmt = torch.channels_last if channels_last_out else torch.contiguous_format
    y = torch.empty((n, k, p, q), device=x.device, dtype=torch.float32, memory_format=fmt)
    kg = k // groups
    grid = (triton.cdiv(n * p * q, config.block_m) * triton.cdiv(kg, config.block_n), groups)
    _conv2d_kernel[grid](
        x, w, bias if bias is not None else y, y,
        n, h, wd, p, q, cg, kg,
        *x.stride(), *w.stride(), *y.stride(),
        stride[0], stride[1], padding[0], padding[1], dilation[0], dilation[1],
        R=r, S=s, HAS_BIAS=bias is not None, PRECISION=precision,
        BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_C=config.block_c, GROUP_M=config.group_m,
        num_warps=config.num_warps, num_stages=config.num_stages,
    )
    return y
