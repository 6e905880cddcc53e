"""fp32-accurate GEMMs on tensor cores, part 1: the TF32 split and the cuBLAS construction.

A float32 GEMM on cuBLAS's fp32 path runs on the CUDA cores (~52 TFLOP/s on an
H200); its TF32 path runs on the tensor cores (~366 TFLOP/s) but reads only the
top 10 mantissa bits of each operand (max error vs float64 ~1,000x cuBLAS
fp32's). Splitting each operand x into a TF32-exact high part and a residual,

    hi = x with its low 13 mantissa bits cleared (optionally rounded first),
    lo = x - hi                                   (exact in fp32),

gives x·y = hi_x·hi_y + hi_x·lo_y + lo_x·hi_y + lo_x·lo_y; the last term is
below fp32's resolution and is dropped, the other three run as TF32 tensor-core
products accumulated in fp32 ("3xTF32", CUTLASS discussion 385). `lo` itself
carries up to 13 significant bits, of which the tensor core reads 11 (Triton's
tf32 dot truncates: bit-identical to pre-truncated operands on the H200;
cuBLAS's TF32 matched neither pre-truncated nor pre-rounded operands): the
residual error per product is <= 2^-22 |x·y| with rounded splits (<= 2^-20,
and biased, truncated).

Where the sum is formed matters as much as the split. The tensor cores add
into their fp32 accumulator with truncation, so a TF32 GEMM that accumulates all
of K inside the tensor core drifts: on an H200 (2026-12-01, K = 8192) three
cuBLAS TF32 GEMMs chained through beta=1 came out 4.6x *less* accurate than
cuBLAS fp32 (and a Triton loop carrying its accumulator through the tensor
cores 13x), while summing each K-tile's products from zero and adding the tile
sums with fp32 round-to-nearest (Triton's ``tf32x3``) was 7x *more* accurate.
Every construction here therefore keeps the tensor-core chains short.
Measured side by side: benchmarks/results/2026-12-01-h200-gemm-fp32 (README).

This module: the split pass (`split_into`, `split_tf32`, `split_kmajor`: one
memory-bound Triton kernel on CUDA) and the **cuBLAS split** construction
(`mm_3xtf32`, `bmm_3xtf32`, `addmm_3xtf32`, `baddbmm_3xtf32`): the split pass
writes A and B straight into the layout the GEMMs read, then cuBLAS TF32 GEMMs
with `torch.backends.cuda.matmul.allow_tf32` switched on for those calls only
and restored. K is cut into chunks (`DEFAULT_K_CHUNK`); per chunk, ``concat``
runs one GEMM on ``[A_lo | A_hi | A_hi] · [B_hi ; B_lo ; B_hi]`` (the three
products, small terms first along K) and ``separate`` runs three; the chunks
are added in cuBLAS's fp32 epilogue (beta=1, round-to-nearest). ``k_chunk=0``
with ``separate`` is the textbook construction (3 GEMMs over all of K).
The Triton kernel is kernels/gemm_triton.py; kernels/gemm_emulated.py is the
library's one import (and its embeddable source).

Non-finite inputs: NaN propagates. A ±inf operand can turn a ±inf product into
NaN in the split constructions (``0 · inf`` in a residual product) except in
Triton's ``tf32x3``/``bf16x*``, which zero NaNs of the residual sum.

On a CPU the cuBLAS-split functions run with torch matmul and *emulate* the
tensor core (each TF32 product reads its operands with the low 13 mantissa bits
cleared, `tc_matmul`), so their numerics can be tested without a GPU.

Run-time library: embedded verbatim into candidate modules (`gemm_emulated.library_source`),
so it imports nothing of KernelOPT.
"""
from __future__ import annotations

import contextlib
import os
import warnings
from dataclasses import dataclass
from typing import Optional

import torch

try:  # the engine needs triton; keep the cuBLAS-split path importable without it
    import triton
    import triton.language as tl

    HAS_TRITON = True
except Exception:  # pragma: no cover
    HAS_TRITON = False

TF32_MASK = -8192  # 0xFFFFE000 as int32: clears the 13 low mantissa bits
TF32_HALF = 0x1000  # half a TF32 ulp in the fp32 bit pattern (round half away from zero)

#: precision methods, for reports: name -> one line
METHODS = {
    "split3": "3xTF32 on cuBLAS: A,B split into TF32-exact hi + residual lo, "
              "lo·hi + hi·lo + hi·hi as TF32 tensor-core GEMMs accumulated in fp32",
    "tf32x3": "Triton tl.dot input_precision='tf32x3' (3xTF32, RN split in registers, "
              "per-K-tile sum from zero added to the fp32 accumulator)",
    "3xtf32": "Triton 3xTF32 written out (RN split in registers, three tf32 tl.dots "
              "from a fresh accumulator per K-tile, added to the fp32 accumulator)",
    "presplit": "Triton 3xTF32 on operands split beforehand (hi and lo K-major in global memory, "
                "one memory pass; TMA feeds the four tiles straight to the tensor cores; "
                "fresh accumulator per K-tile)",
    "bf16x6": "Triton tl.dot input_precision='bf16x6' (operands split into 3 bf16 parts, 6 products)",
    "bf16x3": "Triton tl.dot input_precision='bf16x3' (operands split into 2 bf16 parts, 3 products)",
    "tf32": "plain TF32 (not fp32-accurate)",
    "ieee": "fp32 FMA (no tensor cores)",
}


# --------------------------------------------------------------------------
# TF32 scope and the tensor-core product (real on CUDA, emulated on CPU)
# --------------------------------------------------------------------------


@contextlib.contextmanager
def tf32_matmul_scope(enabled: bool = True):
    """`torch.backends.cuda.matmul.allow_tf32 = enabled` inside, restored after."""
    flags = torch.backends.cuda.matmul
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
    """x with its 13 low mantissa bits cleared (what a TF32 tensor core reads)."""
    return (x.contiguous().view(torch.int32) & TF32_MASK).view(torch.float32).view(x.shape)


def round_tf32(x: torch.Tensor) -> torch.Tensor:
    """x rounded to TF32 (10 mantissa bits), half away from zero; inf/nan kept."""
    xi = x.contiguous().view(torch.int32)
    r = ((xi + TF32_HALF) & TF32_MASK).view(torch.float32).view(x.shape)
    return torch.where(torch.isfinite(x), r, x)


def tc_matmul(a: torch.Tensor, b: torch.Tensor, out: Optional[torch.Tensor] = None,
              accumulate: bool = False, alpha: float = 1.0) -> torch.Tensor:
    """One TF32 tensor-core product ``alpha·a@b`` (2-D or batched 3-D), written to
    `out` (or added to it with `accumulate`).

    CUDA: cuBLAS with allow_tf32 scoped on. CPU: the tensor core is emulated by
    truncating both operands to TF32 (`truncate_tf32`) before an fp32 matmul.
    """
    batched = a.dim() == 3
    if a.is_cuda:
        with tf32_matmul_scope(True):
            if out is None:
                r = torch.bmm(a, b) if batched else torch.mm(a, b)
                return r.mul_(alpha) if alpha != 1.0 else r
            if accumulate:
                return out.baddbmm_(a, b, alpha=alpha) if batched else out.addmm_(a, b, alpha=alpha)
            if batched:
                return torch.bmm(a, b, out=out).mul_(alpha) if alpha != 1.0 else torch.bmm(a, b, out=out)
            return torch.mm(a, b, out=out).mul_(alpha) if alpha != 1.0 else torch.mm(a, b, out=out)
    r = torch.matmul(truncate_tf32(a), truncate_tf32(b))
    if alpha != 1.0:
        r = r * alpha
    if out is None:
        return r
    if accumulate:
        return out.add_(r)
    return out.copy_(r)


def mm_tf32(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Plain TF32 GEMM (one tensor-core product; NOT fp32-accurate). Reference."""
    return tc_matmul(a, b)


def _interpreting() -> bool:
    """Triton kernels run on the CPU interpreter (TRITON_INTERPRET=1)."""
    return os.environ.get("TRITON_INTERPRET") == "1"


# --------------------------------------------------------------------------
# The split pass
# --------------------------------------------------------------------------

if HAS_TRITON:

    @triton.jit
    def _split_kernel(x_ptr, hi_ptr, lo_ptr, hi2_ptr, R, C, NCH,
                      sx0, sx1, sxr, sxc, sh0, sh1, shr, shc, sl0, sl1, slr, slc, s20, s21, s2r, s2c,
                      ROUND: tl.constexpr, HAS_HI: tl.constexpr, HAS_HI2: tl.constexpr,
                      BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
        # one [BLOCK_R, BLOCK_C] tile of one (batch, chunk) slice of a 4-D strided view
        pid_r = tl.program_id(0)
        pid_c = tl.program_id(1)
        p2 = tl.program_id(2)
        i0 = (p2 // NCH).to(tl.int64)
        i1 = (p2 % NCH).to(tl.int64)
        rows = (pid_r * BLOCK_R + tl.arange(0, BLOCK_R)).to(tl.int64)[:, None]
        cols = (pid_c * BLOCK_C + tl.arange(0, BLOCK_C)).to(tl.int64)[None, :]
        mask = (rows < R) & (cols < C)
        x = tl.load(x_ptr + i0 * sx0 + i1 * sx1 + rows * sxr + cols * sxc, mask=mask, other=0.0)
        xi = x.to(tl.int32, bitcast=True)
        if ROUND:
            xi = xi + 0x1000
        hi = (xi & -8192).to(tl.float32, bitcast=True)
        finite = (x == x) & (tl.abs(x) < float("inf"))
        hi = tl.where(finite, hi, x)
        lo = tl.where(finite, x - hi, 0.0)
        if HAS_HI:
            tl.store(hi_ptr + i0 * sh0 + i1 * sh1 + rows * shr + cols * shc, hi, mask=mask)
        tl.store(lo_ptr + i0 * sl0 + i1 * sl1 + rows * slr + cols * slc, lo, mask=mask)
        if HAS_HI2:
            tl.store(hi2_ptr + i0 * s20 + i1 * s21 + rows * s2r + cols * s2c, hi, mask=mask)


def _as4(t: torch.Tensor) -> torch.Tensor:
    while t.dim() < 4:
        t = t.unsqueeze(0)
    return t


def split_into(x: torch.Tensor, lo: torch.Tensor, hi: Optional[torch.Tensor] = None,
               hi2: Optional[torch.Tensor] = None, rounding: str = "rn") -> None:
    """Write x's TF32 split: ``hi`` (and a second copy ``hi2``) and ``lo = x - hi``.

    rounding: ``"trunc"`` (hi = x with the low 13 mantissa bits cleared) or
    ``"rn"`` (hi = x rounded to TF32 first, half away from zero: |lo| <= half a
    TF32 ulp, unbiased). Non-finite x: hi = x, lo = 0. x and the outputs are
    views of the same shape (up to 4-D) with any strides: the outputs may be
    slots of a concatenated operand or a transposed (K-major) layout. One memory
    pass on CUDA (a Triton kernel), torch ops elsewhere.
    """
    if rounding not in ("rn", "trunc"):
        raise ValueError(f"rounding must be 'rn' or 'trunc', not {rounding!r}")
    for t in (lo, hi, hi2):
        if t is not None and t.shape != x.shape:
            raise ValueError(f"output shape {tuple(t.shape)} != input shape {tuple(x.shape)}")
    if x.is_cuda and HAS_TRITON and not _interpreting():
        x4, lo4 = _as4(x), _as4(lo)
        hi4 = _as4(hi) if hi is not None else lo4
        h24 = _as4(hi2) if hi2 is not None else lo4
        n0, n1, R, C = x4.shape
        if x4.numel() == 0:
            return
        # tile along the contiguous dimension of the output
        if lo4.stride(3) == 1 or lo4.stride(2) != 1:
            BR, BC = 16, 256
        else:
            BR, BC = 128, 32
        grid = (triton.cdiv(R, BR), triton.cdiv(C, BC), n0 * n1)
        _split_kernel[grid](x4, hi4, lo4, h24, R, C, n1, *x4.stride(), *hi4.stride(), *lo4.stride(),
                            *h24.stride(), ROUND=rounding == "rn", HAS_HI=hi is not None,
                            HAS_HI2=hi2 is not None, BLOCK_R=BR, BLOCK_C=BC, num_warps=4)
        return
    h = round_tf32(x) if rounding == "rn" else truncate_tf32(x)
    finite = torch.isfinite(x)
    h = torch.where(finite, h, x)
    lo.copy_(torch.where(finite, x - h, torch.zeros_like(x)))
    if hi is not None:
        hi.copy_(h)
    if hi2 is not None:
        hi2.copy_(h)


def split_tf32(x: torch.Tensor, rounding: str = "rn") -> tuple[torch.Tensor, torch.Tensor]:
    """(hi, lo), contiguous, with hi TF32-exact and hi + lo == x exactly (finite x)."""
    hi = torch.empty(x.shape, device=x.device, dtype=torch.float32)
    lo = torch.empty_like(hi)
    split_into(x, lo, hi, rounding=rounding)
    return hi, lo


def split_kmajor(t: torch.Tensor, operand: str, rounding: str = "rn") -> tuple[torch.Tensor, torch.Tensor]:
    """(hi, lo) of a GEMM operand laid out K-major (K contiguous), whatever t's layout.

    operand ``"a"``: t is [.., M, K] -> contiguous parts; ``"b"``: t is [.., K, N] ->
    parts are transposed views of contiguous [.., N, K] tensors (the layout of a
    Linear weight, which the tensor cores read directly for TF32). One pass: the
    split kernel writes the transposed layout itself.
    """
    if operand == "a":
        return split_tf32(t, rounding)
    shp = list(t.shape)
    shp[-2], shp[-1] = shp[-1], shp[-2]
    hi = torch.empty(shp, device=t.device, dtype=torch.float32)
    lo = torch.empty_like(hi)
    split_into(t, lo.transpose(-1, -2), hi.transpose(-1, -2), rounding=rounding)
    return hi.transpose(-1, -2), lo.transpose(-1, -2)


# --------------------------------------------------------------------------
# 3xTF32 on cuBLAS
# --------------------------------------------------------------------------


def choose_layout(m: int, n: int, k: int) -> str:
    """``separate`` or ``concat`` by extra bytes moved (fp32 words).

    separate: the output is read and written twice more (4·M·N words);
    concat: the concatenated operands hold K(M+N) more words than the split
    parts of `separate` (3 copies instead of 2).
    """
    return "concat" if k * (m + n) < 4 * m * n else "separate"


#: K-chunk of the cuBLAS split: each chunk's three products run in one TF32 GEMM
#: (fresh tensor-core accumulator over 3·chunk), chunks are added in cuBLAS's fp32
#: epilogue (beta=1, round-to-nearest). Measured on an H200 (2026-12-01,
#: benchmarks/results/2026-12-01-h200-gemm-fp32): at 1024x8192x1024 the error grows
#: with the chunk (0.50/0.70/1.13/2.22/15.0 e-6 for 64/256/512/1024/8192 against
#: cuBLAS fp32's 1.24e-6); 256 stayed at rho <= 0.85 on the six shapes, 1024 did not.
DEFAULT_K_CHUNK = 256


def _chunk_size(k: int, target: int) -> int:
    if target <= 0 or k <= target:
        return k
    for d in range(target, max(8, target // 2) - 1, -1):
        if k % d == 0:
            return d
    return target  # K is zero-padded to a multiple


@dataclass
class Split3Operands:
    """A and B split for the cuBLAS 3xTF32 GEMMs (`split3_operands`), reusable (a
    weight's split can be made once per job)."""
    layout: str  # concat | separate
    kc: int  # K chunk
    nch: int
    parts: tuple  # concat: (ac [nb, M, nch·3·kc], bc [nb, nch·3·kc, N]); separate: (a_hi, a_lo, b_hi, b_lo)


def split3_operands(a3: torch.Tensor, b3: torch.Tensor, *, rounding: str = "rn", layout: str = "auto",
                    k_chunk: int = DEFAULT_K_CHUNK) -> Split3Operands:
    """The split pass of the cuBLAS construction: a3 [nb, M, K], b3 [nb, K, N]."""
    nb, m, k = a3.shape
    n = b3.shape[2]
    dev = a3.device
    kc = _chunk_size(k, k_chunk)
    nch = -(-k // kc)
    if layout == "auto":
        layout = "concat" if kc < k else choose_layout(m, n, k)
    if layout == "concat":
        kp = nch * kc
        alloc = torch.zeros if kp != k else torch.empty
        # per chunk c: [A_lo | A_hi | A_hi]_c . [B_hi ; B_lo ; B_hi]_c, small terms first along K
        ac = alloc((nb, m, nch, 3, kc), device=dev, dtype=torch.float32)
        bc = alloc((nb, nch, 3, kc, n), device=dev, dtype=torch.float32)
        if kp != k:
            a3 = torch.nn.functional.pad(a3, (0, kp - k))
            b3 = torch.nn.functional.pad(b3, (0, 0, 0, kp - k))
        xa = a3.reshape(nb, m, nch, kc).permute(0, 2, 1, 3)  # [nb, nch, M, kc]
        split_into(xa, lo=ac[:, :, :, 0].permute(0, 2, 1, 3), hi=ac[:, :, :, 1].permute(0, 2, 1, 3),
                   hi2=ac[:, :, :, 2].permute(0, 2, 1, 3), rounding=rounding)
        split_into(b3.reshape(nb, nch, kc, n), lo=bc[:, :, 1], hi=bc[:, :, 0], hi2=bc[:, :, 2],
                   rounding=rounding)
        return Split3Operands("concat", kc, nch, (ac.view(nb, m, nch * 3 * kc), bc.view(nb, nch * 3 * kc, n)))
    if layout != "separate":
        raise ValueError(f"layout must be auto, separate or concat, not {layout!r}")
    a_hi, a_lo = split_tf32(a3, rounding)
    b_hi, b_lo = split_tf32(b3, rounding)
    return Split3Operands("separate", kc, nch, (a_hi, a_lo, b_hi, b_lo))


def split3_gemm(ops: Split3Operands, out: torch.Tensor, *, accumulate: bool = False,
                alpha: float = 1.0) -> torch.Tensor:
    """The TF32 GEMMs of the cuBLAS construction into out [nb, M, N] (added to it with
    `accumulate`): per K chunk, the small products first, the big one last."""
    first = accumulate
    if ops.layout == "concat":
        ac, bc = ops.parts
        w = 3 * ops.kc
        for c in range(ops.nch):
            tc_matmul(ac[:, :, w * c:w * (c + 1)], bc[:, w * c:w * (c + 1)], out=out, accumulate=first,
                      alpha=alpha)
            first = True
        return out
    a_hi, a_lo, b_hi, b_lo = ops.parts
    k = a_hi.shape[2]
    for c0 in range(0, k, ops.kc):
        sl = slice(c0, min(k, c0 + ops.kc))
        tc_matmul(a_lo[:, :, sl], b_hi[:, sl], out=out, accumulate=first, alpha=alpha)
        tc_matmul(a_hi[:, :, sl], b_lo[:, sl], out=out, accumulate=True, alpha=alpha)
        tc_matmul(a_hi[:, :, sl], b_hi[:, sl], out=out, accumulate=True, alpha=alpha)
        first = True
    return out


def _split3_core(a3: torch.Tensor, b3: torch.Tensor, bias3: Optional[torch.Tensor],
                 beta: float, alpha: float, rounding: str, layout: str,
                 k_chunk: int = DEFAULT_K_CHUNK, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Batched core: a3 [nb, M, K], b3 [nb, K, N] -> [nb, M, N] (fp32), into `out` where given
    (an [nb, M, N] fp32 tensor sharing no memory with the operands or the bias)."""
    nb, m, _ = a3.shape
    n = b3.shape[2]
    if out is None:
        out = torch.empty((nb, m, n), device=a3.device, dtype=torch.float32)
    if bias3 is not None:
        out.copy_(bias3.expand(nb, m, n))
        if beta != 1.0:
            out.mul_(beta)
    ops = split3_operands(a3, b3, rounding=rounding, layout=layout, k_chunk=k_chunk)
    return split3_gemm(ops, out, accumulate=bias3 is not None, alpha=alpha)


def _check_f32(*ts):
    for t in ts:
        if t is not None and t.dtype != torch.float32:
            raise TypeError(f"fp32 tensors only, got {t.dtype}")


def mm_3xtf32(a: torch.Tensor, b: torch.Tensor, *, rounding: str = "rn",
              layout: str = "auto", k_chunk: int = DEFAULT_K_CHUNK) -> torch.Tensor:
    """fp32-accurate ``a @ b`` (2-D) as 3xTF32 on cuBLAS.

    Method: one split pass (hi = TF32 rounding/truncation of x, lo = x - hi),
    then TF32 tensor-core GEMMs lo·hi + hi·lo + hi·hi (small terms first)
    accumulated in fp32; allow_tf32 is on only for those calls. K is cut into
    chunks of `k_chunk` (0: no chunks): the tensor core sums one chunk, cuBLAS's
    fp32 epilogue (beta=1, round-to-nearest) adds the chunks. `layout`:
    ``concat`` (per chunk one GEMM on [A_lo|A_hi|A_hi]·[B_hi;B_lo;B_hi]),
    ``separate`` (per chunk 3 GEMMs through beta=1) or ``auto`` (concat when
    chunked, else `choose_layout`). CPU: tensor core emulated (`tc_matmul`).
    """
    _check_f32(a, b)
    return _split3_core(a.unsqueeze(0), b.unsqueeze(0), None, 1.0, 1.0, rounding, layout, k_chunk)[0]


def bmm_3xtf32(a: torch.Tensor, b: torch.Tensor, *, rounding: str = "rn",
               layout: str = "auto", k_chunk: int = DEFAULT_K_CHUNK) -> torch.Tensor:
    """fp32-accurate ``torch.bmm(a, b)`` as 3xTF32 on cuBLAS (method: `mm_3xtf32`,
    batched GEMMs: bmm then baddbmm with beta=1)."""
    _check_f32(a, b)
    return _split3_core(a, b, None, 1.0, 1.0, rounding, layout, k_chunk)


def addmm_3xtf32(bias: torch.Tensor, a: torch.Tensor, b: torch.Tensor, *, beta: float = 1.0,
                 alpha: float = 1.0, rounding: str = "rn", layout: str = "auto",
                 k_chunk: int = DEFAULT_K_CHUNK) -> torch.Tensor:
    """fp32-accurate ``torch.addmm(bias, a, b, beta=, alpha=)`` as 3xTF32 on cuBLAS.

    Method: `mm_3xtf32`; the output starts as beta·bias (broadcast) and every
    TF32 product is added to it in cuBLAS's fp32 epilogue (alpha applied there).
    """
    _check_f32(bias, a, b)
    bias3 = bias.expand(a.shape[0], b.shape[1]).unsqueeze(0)
    return _split3_core(a.unsqueeze(0), b.unsqueeze(0), bias3, beta, alpha, rounding, layout, k_chunk)[0]


def baddbmm_3xtf32(bias: torch.Tensor, a: torch.Tensor, b: torch.Tensor, *, beta: float = 1.0,
                   alpha: float = 1.0, rounding: str = "rn", layout: str = "auto",
                 k_chunk: int = DEFAULT_K_CHUNK) -> torch.Tensor:
    """fp32-accurate ``torch.baddbmm(bias, a, b, beta=, alpha=)`` (method: `addmm_3xtf32`)."""
    _check_f32(bias, a, b)
    bias3 = bias.expand(a.shape[0], a.shape[1], b.shape[2])
    return _split3_core(a, b, bias3, beta, alpha, rounding, layout, k_chunk)


# --------------------------------------------------------------------------
# Error measure (the one the benchmark and the tests use)
# --------------------------------------------------------------------------


def max_rel_error(c: torch.Tensor, ref64: torch.Tensor) -> float:
    """max|c - ref| / max|ref| with ref in float64."""
    den = ref64.abs().max().item()
    return (c.double() - ref64).abs().max().item() / (den if den else 1.0)
