"""Operands with structure built in the graph, and reductions that reduce nothing.

- `diag(v) @ B = v[:, None] · B` and `B @ diag(v) = B · v[None, :]`: `torch.diag(v)` reaches the graph as
  `where(iota == iota[:, None], v, 0)`; the product with it is a row (column) scaling.
- A sum, mean, amax or amin over dims that all have size 1 is its input (reshaped when the dims are dropped).
"""
from __future__ import annotations

from typing import Any, Optional

import torch
from torch.fx import Node

from kernelopt.rewrite.fx import args_of, aten, kwargs_of, norm_dims, shape, val
from kernelopt.rewrite.match import Identity, Rewrite

prims = torch.ops.prims


def _iota(n: Any) -> Optional[int]:
    """The length of `iota(L)` (start 0, step 1), else None."""
    if not isinstance(n, Node) or n.target is not prims.iota.default:
        return None
    if kwargs_of(n).get("start", 0) != 0 or kwargs_of(n).get("step", 1) != 1:
        return None
    return int(args_of(n)[0])


def _column_iota(n: Any) -> Optional[int]:
    if isinstance(n, Node) and n.target is aten.unsqueeze.default and args_of(n)[1] in (-1, 1):
        return _iota(args_of(n)[0])
    return None


def _row_iota(n: Any) -> Optional[int]:
    if isinstance(n, Node) and n.target is aten.unsqueeze.default and args_of(n)[1] in (0, -2):
        return _iota(args_of(n)[0])
    return _iota(n)


def _zero(n: Any) -> bool:
    if isinstance(n, (int, float)):
        return n == 0
    if isinstance(n, Node) and n.target is aten.scalar_tensor.default:
        return args_of(n)[0] == 0
    return (isinstance(n, Node) and n.target is aten.full.default and list(args_of(n)[0]) == []
            and args_of(n)[1] == 0)


def _same_shape_view(n: Any) -> Any:
    """`n` without views that keep its shape (make_fx leaves `view(eq, [n, n])` where AOT's passes drop it)."""
    while isinstance(n, Node) and n.target in (aten.view.default, aten.reshape.default) and \
            val(n) is not None and val(args_of(n)[0]) is not None and shape(n) == shape(args_of(n)[0]):
        n = args_of(n)[0]
    return n


def diagonal_source(n: Any) -> Optional[Node]:
    """For `where(iota == iota[:, None], X, 0)` (an n×n matrix zero off the diagonal): X, else None."""
    if not isinstance(n, Node) or n.target is not aten.where.self or val(n) is None or len(shape(n)) != 2:
        return None
    cond, x, z = args_of(n)
    cond = _same_shape_view(cond)
    if not _zero(z) or not isinstance(x, Node) or not isinstance(cond, Node) or cond.target is not aten.eq.Tensor:
        return None
    a, b = args_of(cond)
    size = shape(n)[0]
    pairs = ((_row_iota(a), _column_iota(b)), (_row_iota(b), _column_iota(a)))
    if shape(n) != (size, size) or not any(r == c == size for r, c in pairs):
        return None
    return x


def match_diag(node: Node) -> Optional[Rewrite]:
    if node.target is not aten.mm.default or val(node) is None:
        return None
    a, b = args_of(node)
    for side, mat, other in (("left", a, b), ("right", b, a)):
        src = diagonal_source(mat)
        if src is None or val(src).dtype != val(node).dtype:
            continue
        size = shape(mat)[0]
        return Rewrite("diag-operand", f"{node.name}: mm with the {side} operand {mat.name} diagonal "
                       f"({size}x{size}): a {'row' if side == 'left' else 'column'} scaling", node, [src, other],
                       _scaling(side, size))
    return None


def _scaling(side: str, size: int):
    def fn(x_: torch.Tensor, other_: torch.Tensor) -> torch.Tensor:
        d = torch.diagonal(torch.broadcast_to(x_, (size, size)))
        return d[:, None] * other_ if side == "left" else other_ * d[None, :]
    return fn


SIZE_ONE = (aten.sum.dim_IntList, aten.mean.dim, aten.amax.default, aten.amin.default)


def match_size_one(node: Node) -> Optional[Rewrite]:
    if node.target not in SIZE_ONE or val(node) is None or kwargs_of(node).get("dtype") is not None:
        return None
    x = args_of(node)[0]
    if not isinstance(x, Node) or val(x) is None or val(x).dtype != val(node).dtype:
        return None
    dims = norm_dims(args_of(node)[1] if len(args_of(node)) > 1 else None, len(shape(x)))
    if not dims or any(shape(x)[d] != 1 for d in dims):
        return None
    out = shape(node)

    def fn(x_: torch.Tensor) -> torch.Tensor:
        return x_ if tuple(x_.shape) == out else x_.reshape(out)
    return Rewrite("size-one-reduction", f"{node.name}: {node.target} over dims {dims} of size 1", node, [x], fn)


DIAG = Identity("diag-operand", "diag(v) @ B = v[:, None] * B; B @ diag(v) = B * v[None, :]",
                "mm with an operand built in the graph as where(iota == iota[:, None], X, 0), square, same dtype",
                match_diag)
SIZE_ONE_REDUCTION = Identity("size-one-reduction", "reduce_{d}(x) = x where every reduced dim has size 1",
                              "sum/mean/amax/amin (no dtype argument) over dims that all have size 1",
                              match_size_one)
