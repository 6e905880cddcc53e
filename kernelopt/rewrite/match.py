"""What an identity reports when it matches: the nodes it replaces and the function that replaces them."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import torch
from torch.fx import Node

from kernelopt.rewrite.fx import (
    args_of,
    aten,
    depends_on,
    is_number,
    is_scalar_tensor,
    kwargs_of,
    norm_dims,
    only_user,
    shape,
    val,
)

#: the reductions a linear chain may end in (a sum or mean over some dims, in the value's own dtype)
REDUCTIONS = (aten.sum.dim_IntList, aten.mean.dim)


@dataclass
class Rewrite:
    """One application of an identity: `end`'s value equals `fn(*inputs)` for every input and weight."""

    identity: str
    where: str  # the graph nodes it spans, for the report
    end: Node  # the node whose uses the replacement takes over
    inputs: list[Node]
    fn: Callable[..., torch.Tensor]


@dataclass(frozen=True)
class Identity:
    name: str
    statement: str  # the identity, in one line of math
    conditions: str  # when it holds, as checked on the graph
    match: Callable[[Node], Optional[Rewrite]]


@dataclass
class Step:
    """One elementwise-linear step of a chain after a linear operator: y -> y * s, y / s, -y, y + t, y - t, t - y.

    `operand` is a Python number or a node that does not depend on the chain; for a scale it is a scalar.
    """

    op: str  # "mul" | "div" | "neg" | "add" | "sub" | "rsub"
    operand: Any = None
    shape: tuple[int, ...] = field(default_factory=tuple)  # the value's shape at this step


def linear_step(user: Node, cur: Node) -> Optional[Step]:
    """`user` as a linear step of `cur` (see Step), or None: anything else ends the chain.

    The result must keep `cur`'s shape and dtype (no broadcast growth, no type promotion); `alpha` is refused.
    """
    t = user.target
    args = args_of(user)
    if val(user) is None or val(cur) is None or shape(user) != shape(cur) or val(user).dtype != val(cur).dtype:
        return None
    if kwargs_of(user).get("alpha", 1) != 1:
        return None
    if t is aten.neg.default and args[0] is cur:
        return Step("neg", None, shape(cur))
    if len(args) != 2:
        return None
    a, b = args
    if t in (aten.mul.Tensor, aten.mul.Scalar):
        other = b if a is cur else a if b is cur else None
        if other is None or other is cur or not _scalar(other, cur):
            return None
        return Step("mul", other, shape(cur))
    if t in (aten.div.Tensor, aten.div.Scalar) and a is cur and b is not cur and _scalar(b, cur):
        return Step("div", b, shape(cur))
    if t in (aten.add.Tensor, aten.add.Scalar, aten.sub.Tensor, aten.sub.Scalar):
        other = b if a is cur else a if b is cur else None
        if other is None or other is cur or depends_on(other, cur):
            return None
        if t in (aten.add.Tensor, aten.add.Scalar):
            return Step("add", other, shape(cur))
        return Step("sub" if a is cur else "rsub", other, shape(cur))
    return None


def _scalar(x: Any, cur: Node) -> bool:
    return is_number(x) or (is_scalar_tensor(x) and not depends_on(x, cur))


def chain(start: Node, accept: Callable[[Node, Node], Any]) -> tuple[list[tuple[Node, Any]], Node]:
    """Follow single users from `start` while `accept(user, cur)` returns a step; ([(node, step)...], last node)."""
    steps: list[tuple[Node, Any]] = []
    cur: Node = start
    while True:
        user = only_user(cur)
        if user is None:
            return steps, cur
        step = accept(user, cur)
        if step is None:
            return steps, cur
        steps.append((user, step))
        cur = user


def apply_scale(step: Step, v: torch.Tensor, operand: Any) -> torch.Tensor:
    """A scale step applied to `v` (operand: the number, or the scalar tensor passed in)."""
    if step.op == "mul":
        return v * operand
    if step.op == "div":
        return v / operand
    if step.op == "neg":
        return -v
    raise ValueError(step.op)


@dataclass
class ChainReduction:
    """A linear chain from a node (its Steps) ending in a sum or mean over `dims` (REDUCTIONS)."""

    steps: list[tuple[Node, Step]]
    red: Node
    dims: list[int]
    keepdim: bool

    @property
    def mean(self) -> bool:
        return self.red.target is aten.mean.dim

    @property
    def operands(self) -> list[Node]:
        """The steps' tensor operands, in order: the replacement's inputs after the linear operator's own."""
        return [s.operand for _, s in self.steps if isinstance(s.operand, Node)]

    def finish(self, y: torch.Tensor, ops: tuple[torch.Tensor, ...] | list[torch.Tensor], count: int) -> torch.Tensor:
        """The chain applied to `y`, the start's *sum* over `dims` (keepdim; `count` values each), as the reduction
        is linear: each added term summed over the same dims (a number `count` times), scales as they are; then
        the mean's division and the reduction's own shape. `ops`: the values of `operands`."""
        it = iter(ops)
        for _, s in self.steps:
            operand = next(it) if isinstance(s.operand, Node) else s.operand
            if s.op in ("add", "sub", "rsub"):
                summed = (torch.broadcast_to(operand, s.shape).sum(self.dims, keepdim=True)
                          if isinstance(operand, torch.Tensor) else operand * count)
                y = y + summed if s.op == "add" else y - summed if s.op == "sub" else summed - y
            else:
                y = apply_scale(s, y, operand)
        if self.mean:
            y = y / count
        return y if self.keepdim else y.reshape(shape(self.red))


def linear_chain_reduction(start: Node) -> Optional[ChainReduction]:
    """`start`, linear steps (linear_step), then a sum or mean with no dtype argument as the chain's only user."""
    steps, cur = chain(start, linear_step)
    red = only_user(cur)
    if red is None or red.target not in REDUCTIONS or kwargs_of(red).get("dtype") is not None or len(args_of(red)) < 2:
        return None
    keepdim = bool(args_of(red)[2]) if len(args_of(red)) > 2 else bool(kwargs_of(red).get("keepdim", False))
    return ChainReduction(steps, red, norm_dims(args_of(red)[1], len(shape(start))), keepdim)
