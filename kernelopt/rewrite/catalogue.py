"""The catalogue: every identity the rewrite stage knows, in the order it tries them on each node.

Each is exact in real arithmetic for every input and every weight under the conditions it states (it
changes rounding, which the gates judge; non-finite values may propagate differently, as in any
reassociation). Nothing here names a problem or a shape.
"""
from __future__ import annotations

from kernelopt.rewrite import conv_channels, conv_pool, conv_reduce, conv_transpose_pool, gemm_rowmap, structured
from kernelopt.rewrite.match import Identity

CATALOGUE: tuple[Identity, ...] = (
    structured.SIZE_ONE_REDUCTION,
    gemm_rowmap.IDENTITY,
    conv_reduce.IDENTITY,
    conv_channels.IDENTITY,
    conv_pool.IDENTITY,
    conv_transpose_pool.IDENTITY,
    structured.DIAG,
)


def describe() -> list[dict]:
    return [{"name": i.name, "statement": i.statement, "conditions": i.conditions} for i in CATALOGUE]
