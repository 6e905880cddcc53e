"""fp32-accurate GEMMs on tensor cores (mm, bmm, addmm, baddbmm): the library's one import.

A float32 GEMM as TF32 tensor-core products of operands split into a TF32-exact
high part and a residual ("3xTF32"), or of bf16 parts, with short tensor-core
accumulation chains (why, and what was measured: kernels/gemm_split3.py). Two
constructions, each with its method stated in its docstring:

* **cuBLAS split** (`mm_3xtf32`, `bmm_3xtf32`, `addmm_3xtf32`,
  `baddbmm_3xtf32`; kernels/gemm_split3.py, with the split pass and the TF32
  helpers): one memory-bound split pass, then cuBLAS TF32 GEMMs per K chunk,
  the chunks added in cuBLAS's fp32 epilogue. On a CPU the tensor core is
  emulated (`tc_matmul`), so their numerics can be tested without a GPU.
* **Triton kernel** (`triton_mm`, `triton_bmm`, `triton_addmm`,
  `triton_baddbmm`, `triton_mm_presplit`; kernels/gemm_triton.py): a
  persistent, TMA-fed kernel whose products use ``tl.dot(...,
  input_precision=P)`` (``tf32x3``, ``3xtf32``, ``presplit``, ``bf16x6``, ...),
  split-K for large-K, small-M×N shapes, tuned per shape on the GPU.

The library is a run-time one: a gemm_fp32 candidate module embeds it
(`library_source`: the parts in dependency order as one self-contained source),
so that the candidate and its `optimized_module.py` need no KernelOPT.
"""
from __future__ import annotations

import ast
import inspect

from kernelopt.kernels import gemm_split3, gemm_triton
from kernelopt.kernels.gemm_split3 import (
    DEFAULT_K_CHUNK,
    HAS_TRITON,
    METHODS,
    TF32_HALF,
    TF32_MASK,
    Split3Operands,
    addmm_3xtf32,
    baddbmm_3xtf32,
    bmm_3xtf32,
    choose_layout,
    max_rel_error,
    mm_3xtf32,
    mm_tf32,
    round_tf32,
    split3_gemm,
    split3_operands,
    split_into,
    split_kmajor,
    split_tf32,
    tc_matmul,
    tf32_matmul_scope,
    truncate_tf32,
)
from kernelopt.kernels.gemm_triton import (
    FP32_ACCURATE,
    HOPPER_CONFIGS,
    INTERPRET_CONFIG,
    K_PAD,
    PRECISIONS,
    PRESPLIT_CONFIGS,
    TF32_CONFIGS,
    TUNED,
    GemmConfig,
    default_configs,
    triton_addmm,
    triton_baddbmm,
    triton_bmm,
    triton_mm,
    triton_mm_presplit,
    triton_supported,
)

__all__ = [
    "DEFAULT_K_CHUNK", "HAS_TRITON", "METHODS", "TF32_HALF", "TF32_MASK", "Split3Operands", "addmm_3xtf32",
    "baddbmm_3xtf32", "bmm_3xtf32", "choose_layout", "max_rel_error", "mm_3xtf32", "mm_tf32", "round_tf32",
    "split3_gemm", "split3_operands", "split_into", "split_kmajor", "split_tf32", "tc_matmul",
    "tf32_matmul_scope", "truncate_tf32",
    "FP32_ACCURATE", "HOPPER_CONFIGS", "INTERPRET_CONFIG", "K_PAD", "PRECISIONS", "PRESPLIT_CONFIGS",
    "TF32_CONFIGS", "TUNED", "GemmConfig", "default_configs", "triton_addmm", "triton_baddbmm", "triton_bmm",
    "triton_mm", "triton_mm_presplit", "triton_supported",
    "PARTS", "library_source",
]

#: the library's modules in dependency order: each imports (of KernelOPT) only from those before it
PARTS = (gemm_split3, gemm_triton)


def library_source() -> str:
    """The whole library as one self-contained module source (the `PARTS` in order), for a module
    that must not import KernelOPT: a gemm_fp32 candidate (search.generators.gemm_group) or
    benchmarks/gemm_fp32.py run from a folder holding it as gemm_emulated.py. Each part's
    `from __future__ import annotations` (it must open a module; the source is embedded after other
    code) and its imports from earlier parts (their names are defined above it) are left out."""
    sources = []
    for index, part in enumerate(PARTS):
        text = inspect.getsource(part)
        earlier = {p.__name__ for p in PARTS[:index]}
        drop: set[int] = set()
        for node in ast.parse(text).body:
            if not isinstance(node, ast.ImportFrom) or node.module is None:
                continue
            if node.module.startswith("kernelopt") and node.module not in earlier:
                raise ValueError(f"{part.__name__} imports {node.module}, not an earlier part of the library")
            if node.module == "__future__" or node.module in earlier:
                drop.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        sources.append("".join(line for i, line in enumerate(text.splitlines(keepends=True), 1) if i not in drop))
    return "\n\n".join(sources)
