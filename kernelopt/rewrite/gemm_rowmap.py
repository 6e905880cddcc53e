"""A linear map of each output row of a GEMM, applied to the weights instead: `f(X @ B + b) = X @ L(B) + f(b)`.

`y = X @ B (+ b)` has one row per row of X. When every op between the GEMM and the graph's next use acts
on each row alone and linearly (sums and means over feature dims, average pools over them, reshapes that
keep the rows apart from the features, scaling by scalars or per-feature tensors, adding terms that are the
same for every row), the chain is an affine map `f(r) = L(r) + f(0)` of a row `r`: applied to every row of
`B` (its `L`) it gives the weights of a GEMM with as many outputs as the chain keeps, and applied to the bias
row it gives the offset. A sum over 4096 outputs becomes a matrix-vector product; a mean over groups of features, or an
average pool over them, a GEMM with fewer columns. The derived weights are computed from `B` in the graph,
every call, so they follow the live parameters.

Not in this identity: anything nonlinear (an activation, a normalization), a reduction over rows (the
batch), a reshape that mixes rows with features, a term that differs between rows.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch
from torch.fx import Node

from kernelopt.rewrite.fx import RESHAPES, args_of, aten, kwargs_of, norm_dims, numel, shape, val
from kernelopt.rewrite.match import REDUCTIONS, Identity, Rewrite, Step, apply_scale, chain, linear_step

GEMMS = (aten.mm.default, aten.addmm.default, aten.bmm.default)
POOLS = {aten.avg_pool1d.default: 1, aten.avg_pool2d.default: 2, aten.avg_pool3d.default: 3}


@dataclass
class RowStep:
    kind: str  # "linear" (a Step), "reduce", "pool", "reshape"
    node: Node
    step: Optional[Step] = None
    rows: int = 0  # number of leading row dims after this step
    rest: tuple[int, ...] = ()  # the feature dims after this step


def match(node: Node) -> Optional[Rewrite]:
    if node.target not in GEMMS or val(node) is None or not val(node).is_floating_point():
        return None
    if node.target is aten.addmm.default and any(kwargs_of(node).get(k, 1) != 1 for k in ("beta", "alpha")):
        return None
    if node.target is aten.addmm.default:
        bias, x, b = args_of(node)[:3]
    else:
        bias, (x, b) = None, args_of(node)[:2]
    out = shape(node)
    rows0 = out[:-1]
    batched = node.target is aten.bmm.default
    if bias is not None and not _row_constant(shape(bias), len(out), len(rows0)):
        return None  # a bias that differs between rows (addmm with an [M, N] input)
    state = {"rows": rows0}

    def accept(user: Node, cur: Node) -> Optional[RowStep]:
        return _row_step(user, cur, state, batched)

    pairs, end = chain(node, accept)
    steps: list[RowStep] = [s for _, s in pairs]
    if not steps:
        return None
    rest_end = steps[-1].rest
    n_in, n_out = out[-1], numel(rest_end)
    if n_out >= n_in:
        return None  # the chain keeps as many outputs as the GEMM computes: nothing to save
    k = shape(x)[-1]
    batch = out[0] if batched else 1
    end_shape = shape(end)
    has_offset = bias is not None or any(s.step is not None and s.step.op in ("add", "sub", "rsub") for s in steps)
    operands = [s.step.operand for s in steps if s.step is not None and isinstance(s.step.operand, Node)]

    def weight_rows(r: int) -> list[int]:
        return [batch, k] if batched else [1] * (r - 1) + [k]

    def replay(v: torch.Tensor, ops: list, rows_of, shifts: bool) -> torch.Tensor:
        it = iter(ops)
        for s in steps:
            if s.kind == "linear":
                assert s.step is not None
                operand = next(it) if isinstance(s.step.operand, Node) else s.step.operand
                if s.step.op in ("add", "sub", "rsub"):
                    if shifts:
                        v = v + operand if s.step.op == "add" else v - operand if s.step.op == "sub" else operand - v
                    elif s.step.op == "rsub":  # t - y: the linear part is negated
                        v = -v
                    continue
                v = apply_scale(s.step, v, operand)
            elif s.kind == "reshape":
                v = v.reshape(rows_of(s.rows) + list(s.rest))
            else:
                op: Any = s.node.target
                v = op(v, *args_of(s.node)[1:], **kwargs_of(s.node))
        return v

    def fn(x_: torch.Tensor, b_: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
        bias_, ops = (rest[0], rest[1:]) if bias is not None else (None, rest)
        w = replay(b_, list(ops), weight_rows, shifts=False)
        w = w.reshape([batch, k, n_out] if batched else [k, n_out])
        y = torch.bmm(x_, w) if batched else torch.mm(x_, w)
        y = y.reshape(end_shape)
        if has_offset:
            row0 = [1] * len(rows0) + [n_in]
            first = b_
            while first.dim() > 1:  # one row of B: [N]
                first = first.select(0, 0)
            zero = torch.zeros_like(first).reshape(row0)
            start = zero if bias_ is None else zero + bias_.reshape(_aligned(shape(bias), len(out)))
            y = y + replay(start, list(ops), lambda r: [1] * r, shifts=True)
        return y

    inputs = [x, b] + ([bias] if bias is not None else []) + operands
    ops = ", ".join(str(s.node.target).removeprefix("aten.") for s in steps)
    return Rewrite("gemm-row-map", f"{node.name} ({node.target}) -> {end.name}: [{ops}]; {n_in} -> {n_out} "
                   f"output columns", end, inputs, fn)


def _aligned(s: tuple[int, ...], rank: int) -> list[int]:
    return [1] * (rank - len(s)) + list(s)


def _row_constant(s: tuple[int, ...], rank: int, rows: int) -> bool:
    """Whether a term of shape `s`, broadcast to a value of rank `rank`, is the same for every row."""
    return len(s) <= rank and all(d == 1 for d in _aligned(s, rank)[:rows])


def _row_step(user: Node, cur: Node, state: dict, batched: bool) -> Optional[RowStep]:
    rows: tuple[int, ...] = state["rows"]
    r = len(rows)
    if val(user) is None or val(user).dtype != val(cur).dtype:
        return None
    out = shape(user)
    step = linear_step(user, cur, tensor_scales=True)
    if step is not None:
        if step.op in ("add", "sub", "rsub") and isinstance(step.operand, Node) and \
                not _row_constant(shape(step.operand), len(out), r):
            return None
        if step.varies & set(range(r)):
            return None  # a scale that differs between rows: not a map of each row
        return RowStep("linear", user, step, r, out[r:])
    t = user.target
    if t in REDUCTIONS:
        if kwargs_of(user).get("dtype") is not None or len(args_of(user)) < 2:
            return None
        dims = norm_dims(args_of(user)[1], len(shape(cur)))
        if not dims or min(dims) < r:
            return None  # a reduction over the rows (the batch) is not a map of each row
        return RowStep("reduce", user, None, r, out[r:])
    if t in POOLS:
        if len(shape(cur)) - POOLS[t] < r:
            return None  # the pool runs over row dims
        return RowStep("pool", user, None, r, out[r:])
    if t in RESHAPES:
        m = numel(rows)
        for r2 in range(1, len(out) + 1):
            if numel(out[:r2]) == m:
                if batched and tuple(out[:r2]) != rows:
                    return None  # bmm's rows are (batch, row): only reshapes that keep both apart
                state["rows"] = tuple(out[:r2])
                return RowStep("reshape", user, None, r2, out[r2:])
            if numel(out[:r2]) > m:
                break
        return None
    return None


def _describe() -> Identity:
    return Identity(
        "gemm-row-map",
        "f(X @ B + b) = X @ L(B) + f(b) for a chain f = L + f(0) acting on each output row alone",
        "mm/addmm/bmm (addmm with beta = alpha = 1 and a bias the same for every row) whose output, and every "
        "value after it, has one user; the chain holds only sums/means over feature dims, average pools over "
        "feature dims, reshapes that keep rows and features apart (for bmm: the batch and row dims unchanged), "
        "multiplication/division by scalars or by tensors the same for every row, negation, and additions of "
        "terms the same for every row; it "
        "ends with fewer outputs per row than the GEMM computes",
        match)


IDENTITY = _describe()
