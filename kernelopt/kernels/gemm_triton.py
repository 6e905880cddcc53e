"""fp32-accurate GEMMs on tensor cores, part 2: the Triton kernel.

**Triton kernel** (`triton_mm`, `triton_bmm`, `triton_addmm`, `triton_baddbmm`,
`triton_mm_presplit`): a persistent, TMA-fed kernel (host tensor descriptors,
grouped tile order, software-pipelined K loop) whose products use
``tl.dot(..., input_precision=P)``: ``tf32x3`` (Triton's own 3xTF32: operands
split in registers with round-to-nearest, the two small products and the big
one summed per K-tile from zero, then added to the fp32 accumulator),
``3xtf32`` (the same split written out), ``presplit`` (operands split
beforehand into K-major hi/lo parts in global memory by kernels/gemm_split3.py,
all tiles fed by TMA straight to the tensor cores, per-K-tile sums),
``bf16x6`` / ``bf16x3`` (operands split into 3 / 2 bf16 parts, 6 / 3
products), or ``tf32`` / ``ieee`` for reference. Split-K (fp32 partial sums in
a workspace, reduced in a fixed order: deterministic) for large-K, small-M×N
shapes. The bias of addmm/baddbmm is added in the epilogue. Configurations are
tuned per shape on the GPU (`tune=True`); without a GPU (TRITON_INTERPRET=1)
one explicit config runs, every dot in fp32. Why per-K-tile sums and what was
measured: kernels/gemm_split3.py.

Run-time library: embedded verbatim after kernels/gemm_split3.py into candidate
modules (`gemm_emulated.library_source` drops the import below), so it imports
nothing else of KernelOPT.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch

from kernelopt.kernels.gemm_split3 import HAS_TRITON, _interpreting, split_kmajor

if HAS_TRITON:
    import triton
    import triton.language as tl

# --------------------------------------------------------------------------
# The Triton kernel
# --------------------------------------------------------------------------

PRECISIONS = ("tf32x3", "3xtf32", "presplit", "bf16x6", "bf16x3", "tf32", "ieee")
FP32_ACCURATE = ("tf32x3", "3xtf32", "presplit", "bf16x6")


@dataclass(frozen=True)
class GemmConfig:
    block_m: int = 128
    block_n: int = 128
    block_k: int = 32
    group_m: int = 8
    num_warps: int = 8
    num_stages: int = 3
    split_k: int = 1
    flatten: bool = True

    def short(self) -> str:
        return (f"{self.block_m}x{self.block_n}x{self.block_k} w{self.num_warps} s{self.num_stages}"
                f" g{self.group_m} splitk{self.split_k}{'' if self.flatten else ' noflat'}")


#: the configurations tuned over on Hopper (fp32 operands: 4 B/elem, 227 KB smem).
#: Checked by compiling for sm_90 with Triton 3.6 (ptxas): all use wgmma and TMA; the
#: split precisions spill at 128x256 (255 regs + stack), so that tile is for tf32 only.
HOPPER_CONFIGS = (
    GemmConfig(128, 128, 32, 8, 8, 3),
    GemmConfig(128, 128, 32, 8, 8, 4),
    GemmConfig(128, 128, 64, 8, 8, 2),
    GemmConfig(64, 128, 32, 8, 4, 4),
)
TF32_CONFIGS = (
    GemmConfig(128, 128, 32, 8, 8, 4),
    GemmConfig(128, 256, 32, 8, 8, 3),
    GemmConfig(128, 128, 64, 8, 8, 3),
)
#: presplit reads four operand tiles per K step: 3 stages of 128x128x32 take 196 KB
#: (one CTA per SM); the 2-stage 64-wide tiles (96 KB, ~150 regs) fit two CTAs per SM,
#: so one CTA's tensor-core work covers the other's wait between its chained dots
PRESPLIT_CONFIGS = (
    GemmConfig(128, 128, 32, 8, 8, 3),
    GemmConfig(64, 128, 32, 8, 4, 2),
    GemmConfig(128, 64, 32, 8, 4, 2),
    GemmConfig(64, 128, 32, 8, 4, 3),
)


def default_configs(precision: str) -> tuple:
    if precision == "presplit":
        return PRESPLIT_CONFIGS
    if precision in ("tf32", "ieee"):
        return TF32_CONFIGS
    return HOPPER_CONFIGS
#: the one config the interpreter runs (small tiles: CPU time)
INTERPRET_CONFIG = GemmConfig(32, 32, 16, 2, 4, 1, flatten=False)
#: K is padded to a multiple of this where batches stack along K (every BLOCK_K divides it)
K_PAD = 64

if HAS_TRITON:

    @triton.jit
    def _tile_coords(tile_id, tiles_m, tiles_n, GROUP_M: tl.constexpr):
        per_mat = tiles_m * tiles_n
        q = tile_id // per_mat
        t = tile_id % per_mat
        width = GROUP_M * tiles_n
        first_m = (t // width) * GROUP_M
        gsize = tl.minimum(tiles_m - first_m, GROUP_M)
        pid_m = first_m + (t % gsize)
        pid_n = (t % width) // gsize
        return q, pid_m, pid_n

    @triton.jit
    def _tf32_hi(x):
        # round to TF32 (half away from zero), then clear the 13 low mantissa bits
        return ((x.to(tl.int32, bitcast=True) + 0x1000) & -8192).to(tl.float32, bitcast=True)

    @triton.jit
    def _mma(a, b, acc, PRECISION: tl.constexpr):
        if PRECISION == "3xtf32":
            # this K-tile's three products from a fresh accumulator, then one
            # round-to-nearest fp32 add: the tensor cores' own accumulation
            # truncates, and over all of K it loses to cuBLAS fp32 (measured)
            a_hi = _tf32_hi(a)
            b_hi = _tf32_hi(b)
            t = tl.dot(a - a_hi, b_hi, tl.zeros_like(acc), input_precision="tf32")
            t = tl.dot(a_hi, b - b_hi, t, input_precision="tf32")
            t = tl.dot(a_hi, b_hi, t, input_precision="tf32")
            acc = acc + t
        else:
            acc = tl.dot(a, b, acc, input_precision=PRECISION)
        return acc

    # M, N and the output strides stay specialized (divisible by 16, equal to 1): the
    # epilogue's stores vectorize only when the row stride and N's divisibility are known
    # (unspecialized, a 32768x64x32768 GEMM ran store-bound at ~260 GB/s)
    @triton.jit(do_not_specialize=["A_ROWS", "B_ROWS", "num_mats", "split_k", "k_tiles_per_split"])
    def _emu_gemm_kernel(a_desc, b_desc, alo_desc, blo_desc, c_ptr, x_ptr,
                         M, N, K, A_ROWS, B_ROWS, num_mats, split_k, k_tiles_per_split,
                         stride_cq, stride_cm, stride_cn,
                         stride_xb, stride_xm, stride_xn,
                         alpha, beta,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr, PRECISION: tl.constexpr,
                         A_T: tl.constexpr, B_T: tl.constexpr, HAS_BIAS: tl.constexpr,
                         FLATTEN: tl.constexpr):
        """C[q] = alpha·A[b]·B[b] (+ beta·X[b]) for q = b·split_k + s, K-range s.

        a_desc: [nb·A_ROWS, K] (A_T: [nb·A_ROWS, M]); b_desc: [nb·B_ROWS, N]
        (B_T: [nb·B_ROWS, K]): batches stacked along rows, K padded where it is
        the stacked dimension (no K-tile crosses a batch). Persistent: NUM_SMS programs walk the tiles.
        """
        start = tl.program_id(0)
        tiles_m = tl.cdiv(M, BLOCK_M)
        tiles_n = tl.cdiv(N, BLOCK_N)
        num_tiles = num_mats * tiles_m * tiles_n
        k_tiles = tl.cdiv(K, BLOCK_K)
        for tile_id in tl.range(start, num_tiles, NUM_SMS, flatten=FLATTEN):
            q, pid_m, pid_n = _tile_coords(tile_id, tiles_m, tiles_n, GROUP_M)
            bz = q // split_k
            s = q % split_k
            off_m = pid_m * BLOCK_M
            off_n = pid_n * BLOCK_N
            kt0 = s * k_tiles_per_split
            kt1 = tl.minimum(kt0 + k_tiles_per_split, k_tiles)
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for kt in range(kt0, kt1):
                off_k = kt * BLOCK_K
                if A_T:
                    a = a_desc.load([bz * A_ROWS + off_k, off_m]).T
                else:
                    a = a_desc.load([bz * A_ROWS + off_m, off_k])
                if B_T:
                    b = b_desc.load([bz * B_ROWS + off_n, off_k]).T
                else:
                    b = b_desc.load([bz * B_ROWS + off_k, off_n])
                if PRECISION == "presplit":
                    # hi parts in a_desc/b_desc, residuals in alo_desc/blo_desc (same layouts)
                    if A_T:
                        a_lo = alo_desc.load([bz * A_ROWS + off_k, off_m]).T
                    else:
                        a_lo = alo_desc.load([bz * A_ROWS + off_m, off_k])
                    if B_T:
                        b_lo = blo_desc.load([bz * B_ROWS + off_n, off_k]).T
                    else:
                        b_lo = blo_desc.load([bz * B_ROWS + off_k, off_n])
                    # fresh per-K-tile sum, added with round-to-nearest (see _mma)
                    t = tl.dot(a_lo, b, tl.zeros_like(acc), input_precision="tf32")
                    t = tl.dot(a, b_lo, t, input_precision="tf32")
                    t = tl.dot(a, b, t, input_precision="tf32")
                    acc = acc + t
                else:
                    acc = _mma(a, b, acc, PRECISION)
            offs_m = off_m + tl.arange(0, BLOCK_M)
            offs_n = off_n + tl.arange(0, BLOCK_N)
            mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
            out = acc * alpha
            if HAS_BIAS:
                x = tl.load(x_ptr + bz.to(tl.int64) * stride_xb + offs_m[:, None].to(tl.int64) * stride_xm
                            + offs_n[None, :] * stride_xn, mask=mask, other=0.0)
                out = out + beta * x
            c_ptrs = (c_ptr + q.to(tl.int64) * stride_cq + offs_m[:, None].to(tl.int64) * stride_cm
                      + offs_n[None, :] * stride_cn)
            tl.store(c_ptrs, out, mask=mask)


_NUM_SMS: dict = {}
_ALLOCATOR_SET = False


def _num_sms(device: torch.device) -> int:
    if device.type != "cuda":
        return 4
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _NUM_SMS:
        _NUM_SMS[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _NUM_SMS[idx]


def _ensure_allocator():
    global _ALLOCATOR_SET
    if not _ALLOCATOR_SET and hasattr(triton, "set_allocator"):
        def alloc(size: int, alignment: int, stream):
            return torch.empty(size, device="cuda", dtype=torch.int8)
        triton.set_allocator(alloc)
        _ALLOCATOR_SET = True


@dataclass
class _Operands:
    a2: torch.Tensor  # 2-D view the A descriptor covers
    b2: torch.Tensor
    a_t: bool
    b_t: bool
    a_rows: int  # rows per batch in a2 (M, or K padded when A_T)
    b_rows: int  # rows per batch in b2 (K padded, or N when B_T)
    nb: int
    m: int
    n: int
    k: int
    alo2: Optional[torch.Tensor] = None  # presplit: residual parts, same layouts as a2 / b2
    blo2: Optional[torch.Tensor] = None


def _prepare(a3: torch.Tensor, b3: torch.Tensor) -> _Operands:
    """2-D, last-dim-contiguous views of batched operands for TMA descriptors.

    A [nb, M, K] with K contiguous and batches stacked -> [nb·M, K]; with M
    contiguous (a transposed view) -> [nb·K, M] and A_T. Same for B. Other
    layouts, and views not 16-byte aligned, are copied to contiguous. Where
    batches stack along K (A_T, or B not transposed) and K is not a multiple of
    K_PAD, that operand is copied with K zero-padded, so that no K-tile reads
    the next batch. TMA needs 16-byte aligned row strides: K, N (or M) a
    multiple of 4 fp32 elements; the wrapper checks `triton_supported` first.
    """
    nb, m, k = a3.shape
    n = b3.shape[2]

    def aligned(v):
        return v.data_ptr() % 16 == 0 and v.stride(0) % 4 == 0

    def flat(t, r, c):  # t [nb, r, c] -> ([nb*r, c] view, False) or ([nb*c, r] view, True)
        if t.stride(2) == 1 and (nb == 1 or t.stride(0) == r * t.stride(1)):
            v = t.reshape(nb * r, c)
            if aligned(v):
                return v, False
        if t.stride(1) == 1 and (nb == 1 or t.stride(0) == c * t.stride(2)):
            v = t.transpose(1, 2).reshape(nb * c, r)
            if aligned(v):
                return v, True
        return t.contiguous().reshape(nb * r, c), False

    kp = -(-k // K_PAD) * K_PAD if nb > 1 else k
    a2, a_t = flat(a3, m, k)
    if a_t and kp != k:
        a2 = torch.nn.functional.pad(a3.transpose(1, 2), (0, 0, 0, kp - k)).reshape(nb * kp, m)
    b2, b_t = flat(b3, k, n)
    if not b_t and kp != k:
        b2, b_t = torch.nn.functional.pad(b3, (0, 0, 0, kp - k)).reshape(nb * kp, n), False
    return _Operands(a2, b2, a_t, b_t, kp if a_t else m, n if b_t else kp, nb, m, n, k)


def triton_supported(a3: torch.Tensor, b3: torch.Tensor) -> Optional[str]:
    """None when the Triton kernel can take these operands, else the reason."""
    if not HAS_TRITON:
        return "triton not importable"
    if a3.dtype != torch.float32 or b3.dtype != torch.float32:
        return "fp32 only"
    nb, m, k = a3.shape
    n = b3.shape[2]
    if min(m, n, k) == 0:
        return "empty"
    for d in (m, n, k):
        if d % 4:
            return "M, N and K must be multiples of 4 (TMA needs 16-byte row strides)"
    if not _interpreting() and a3.is_cuda and torch.cuda.get_device_capability(a3.device)[0] < 9:
        return "needs Hopper (TMA)"
    return None


def _config_ok(cfg: GemmConfig, ops: _Operands) -> bool:
    # K-tiles must not cross a batch boundary where K is the stacked row dimension
    return K_PAD % cfg.block_k == 0


def _split_k_candidates(ops: _Operands, cfg: GemmConfig, num_sms: int) -> list[int]:
    tiles = ops.nb * math.ceil(ops.m / cfg.block_m) * math.ceil(ops.n / cfg.block_n)
    k_tiles = math.ceil(ops.k / cfg.block_k)
    if tiles >= num_sms // 2 or k_tiles < 16:
        return [1]
    base = math.ceil(num_sms / tiles)
    out = []
    for s in (base, 2 * base, 4 * base):
        s = max(1, min(s, k_tiles // 4))
        s = math.ceil(k_tiles / math.ceil(k_tiles / s))  # no empty splits
        if s not in out:
            out.append(s)
    return out


def _launch(ops: _Operands, cfg: GemmConfig, precision: str,
            bias3: Optional[torch.Tensor], beta: float, alpha: float,
            out: Optional[torch.Tensor] = None) -> torch.Tensor:
    from triton.tools.tensor_descriptor import TensorDescriptor

    dev = ops.a2.device
    nb, m, n, k = ops.nb, ops.m, ops.n, ops.k
    if dev.type == "cuda" and not _interpreting():
        _ensure_allocator()
    a_block = [cfg.block_k, cfg.block_m] if ops.a_t else [cfg.block_m, cfg.block_k]
    b_block = [cfg.block_n, cfg.block_k] if ops.b_t else [cfg.block_k, cfg.block_n]
    a_desc = TensorDescriptor.from_tensor(ops.a2, a_block)
    b_desc = TensorDescriptor.from_tensor(ops.b2, b_block)
    alo_desc = TensorDescriptor.from_tensor(ops.alo2, a_block) if ops.alo2 is not None else a_desc
    blo_desc = TensorDescriptor.from_tensor(ops.blo2, b_block) if ops.blo2 is not None else b_desc
    if precision == "presplit" and ops.alo2 is None:
        raise ValueError("presplit needs the residual operands")
    split = cfg.split_k
    k_tiles = math.ceil(k / cfg.block_k)
    kps = math.ceil(k_tiles / split)
    split = math.ceil(k_tiles / kps)
    if out is None:
        out = torch.empty((nb, m, n), device=dev, dtype=torch.float32)
    if split == 1:  # the epilogue applies alpha and the bias
        c, has_bias, k_alpha, k_beta = out, bias3 is not None, alpha, beta
    else:  # partial sums into a workspace [nb, split, M, N]; alpha and bias after the reduction
        c, has_bias, k_alpha, k_beta = torch.empty((nb * split, m, n), device=dev, dtype=torch.float32), False, 1.0, 0.0
    scq, scm, scn = c.stride()
    x = bias3 if has_bias and bias3 is not None else c
    sxb, sxm, sxn = x.stride()
    num_sms = _num_sms(dev)
    tiles = nb * split * math.ceil(m / cfg.block_m) * math.ceil(n / cfg.block_n)
    grid = (min(num_sms, tiles),)
    if _interpreting() and precision.startswith("bf16"):
        precision = "ieee"  # the interpreter computes every dot in fp32 and rejects bf16xN
    _emu_gemm_kernel[grid](a_desc, b_desc, alo_desc, blo_desc, c, x, m, n, k, ops.a_rows, ops.b_rows, nb * split, split, kps,
                           scq, scm, scn, sxb, sxm, sxn, float(k_alpha), float(k_beta),
                           BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k,
                           GROUP_M=cfg.group_m, NUM_SMS=num_sms, PRECISION=precision,
                           A_T=ops.a_t, B_T=ops.b_t, HAS_BIAS=has_bias,
                           FLATTEN=cfg.flatten, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
    if split > 1:
        torch.sum(c.view(nb, split, m, n), dim=1, out=out)  # fixed order: deterministic
        if alpha != 1.0:
            out.mul_(alpha)
        if bias3 is not None:
            out.add_(bias3.expand(nb, m, n), alpha=beta)
    return out


#: tuned choice per problem key -> (GemmConfig, {config.short(): ms or error})
TUNED: dict = {}


def _tune(ops: _Operands, precision: str, bias3, beta, alpha, configs) -> GemmConfig:
    key = (ops.nb, ops.m, ops.n, ops.k, ops.a_t, ops.b_t, precision, bias3 is not None,
           torch.cuda.get_device_name(ops.a2.device))
    if key in TUNED:
        return TUNED[key][0]
    from triton.testing import do_bench

    num_sms = _num_sms(ops.a2.device)
    results: dict = {}
    best, best_ms = None, float("inf")
    out = torch.empty((ops.nb, ops.m, ops.n), device=ops.a2.device, dtype=torch.float32)
    for base in configs:
        if not _config_ok(base, ops):
            continue
        for s in _split_k_candidates(ops, base, num_sms):
            cfg = GemmConfig(**{**base.__dict__, "split_k": s})
            try:
                ms = do_bench(lambda cfg=cfg: _launch(ops, cfg, precision, bias3, beta, alpha, out),
                              warmup=5, rep=20, return_mode="median")
            except Exception as e:  # compile failure, out of shared memory, ...
                results[cfg.short()] = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
                continue
            results[cfg.short()] = ms
            if ms < best_ms:
                best, best_ms = cfg, ms
    if best is None:
        raise RuntimeError(f"no Triton config ran for {key}: {results}")
    TUNED[key] = (best, results)
    return best


def _presplit_operands(a_hi, a_lo, b_hi, b_lo) -> _Operands:
    ops = _prepare(a_hi, b_hi)
    lo = _prepare(a_lo, b_lo)
    if (lo.a_t, lo.b_t, lo.a2.stride(), lo.b2.stride()) != (ops.a_t, ops.b_t, ops.a2.stride(), ops.b2.stride()):
        raise ValueError("hi and lo parts must share their layouts")
    ops.alo2, ops.blo2 = lo.a2, lo.b2
    return ops


def triton_mm_presplit(a_hi: torch.Tensor, a_lo: torch.Tensor, b_hi: torch.Tensor, b_lo: torch.Tensor, *,
                       config: Optional[GemmConfig] = None, tune: bool = True, configs=None) -> torch.Tensor:
    """``a @ b`` from operands split beforehand (`split_kmajor`), e.g. a weight split once
    per job. Method: three TF32 tensor-core products lo·hi + hi·lo + hi·hi into one
    fp32 accumulator, every tile fed by TMA from global memory (batched: 3-D parts)."""
    batched = a_hi.dim() == 3
    parts = [t if batched else t.unsqueeze(0) for t in (a_hi, a_lo, b_hi, b_lo)]
    why = triton_supported(parts[0], parts[2])
    if why:
        raise NotImplementedError(why)
    ops = _presplit_operands(*parts)
    if config is None:
        if _interpreting() or not a_hi.is_cuda:
            config = INTERPRET_CONFIG
        elif tune:
            config = _tune(ops, "presplit", None, 1.0, 1.0, configs or PRESPLIT_CONFIGS)
        else:
            config = PRESPLIT_CONFIGS[0]
    out = _launch(ops, config, "presplit", None, 1.0, 1.0)
    return out if batched else out[0]


def _triton_core(a3, b3, bias3, beta, alpha, precision, config, tune, configs, out=None):
    """Batched core of the Triton constructions; into `out` where given (as `_split3_core`)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
    why = triton_supported(a3, b3)
    if why:
        raise NotImplementedError(why)
    if precision == "presplit":
        a_hi, a_lo = split_kmajor(a3, "a")
        b_hi, b_lo = split_kmajor(b3, "b")
        ops = _presplit_operands(a_hi, a_lo, b_hi, b_lo)
    else:
        ops = _prepare(a3, b3)
    if config is None:
        if _interpreting() or not a3.is_cuda:
            config = INTERPRET_CONFIG
        elif tune:
            config = _tune(ops, precision, bias3, beta, alpha, configs or default_configs(precision))
        else:
            config = default_configs(precision)[0]
    if not _config_ok(config, ops):
        raise NotImplementedError(f"config {config.short()}: K={ops.k} not a multiple of BLOCK_K in a batch")
    return _launch(ops, config, precision, bias3, beta, alpha, out)


def triton_mm(a: torch.Tensor, b: torch.Tensor, *, precision: str = "tf32x3",
              config: Optional[GemmConfig] = None, tune: bool = True, configs=None) -> torch.Tensor:
    """``a @ b`` (2-D fp32) by the persistent TMA Triton kernel.

    Method: `precision` ("tf32x3" default: Triton's 3xTF32; "3xtf32": the split
    written out with a carried accumulator; "bf16x6"; "bf16x3", "tf32" and
    "ieee" for comparison; see METHODS). fp32 accumulation; split-K partial sums
    reduced in a fixed order. `config`: a GemmConfig, else tuned per shape on
    the GPU (`tune`) or the interpreter's config.
    """
    return _triton_core(a.unsqueeze(0), b.unsqueeze(0), None, 1.0, 1.0, precision, config, tune, configs)[0]


def triton_bmm(a: torch.Tensor, b: torch.Tensor, *, precision: str = "tf32x3",
               config: Optional[GemmConfig] = None, tune: bool = True, configs=None) -> torch.Tensor:
    """``torch.bmm(a, b)`` by the Triton kernel (method: `triton_mm`)."""
    return _triton_core(a, b, None, 1.0, 1.0, precision, config, tune, configs)


def triton_addmm(bias: torch.Tensor, a: torch.Tensor, b: torch.Tensor, *, beta: float = 1.0,
                 alpha: float = 1.0, precision: str = "tf32x3", config: Optional[GemmConfig] = None,
                 tune: bool = True, configs=None) -> torch.Tensor:
    """``torch.addmm(bias, a, b, beta=, alpha=)`` by the Triton kernel; the bias
    (any broadcastable shape: [N], [1, N], [M, 1], [M, N]) is added in the
    kernel's epilogue, ``alpha·acc + beta·bias`` in fp32 (method: `triton_mm`)."""
    bias3 = bias.expand(a.shape[0], b.shape[1]).unsqueeze(0)
    return _triton_core(a.unsqueeze(0), b.unsqueeze(0), bias3, beta, alpha, precision, config, tune,
                        configs)[0]


def triton_baddbmm(bias: torch.Tensor, a: torch.Tensor, b: torch.Tensor, *, beta: float = 1.0,
                   alpha: float = 1.0, precision: str = "tf32x3", config: Optional[GemmConfig] = None,
                   tune: bool = True, configs=None) -> torch.Tensor:
    """``torch.baddbmm(bias, a, b, beta=, alpha=)`` by the Triton kernel (bias epilogue as
    in `triton_addmm`)."""
    bias3 = bias.expand(a.shape[0], a.shape[1], b.shape[2])
    return _triton_core(a, b, bias3, beta, alpha, precision, config, tune, configs)
