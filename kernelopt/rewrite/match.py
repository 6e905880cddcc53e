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

    `operand` is a Python number or a node that does not depend on the chain; for a scale it is a scalar, or
    (where linear_step was given `tensor_scales`) a tensor that broadcasts into the value, `varies` naming the
    value's dims along which it is not constant.
    """

    op: str  # "mul" | "div" | "neg" | "add" | "sub" | "rsub"
    operand: Any = None
    shape: tuple[int, ...] = field(default_factory=tuple)  # the value's shape at this step
    varies: frozenset[int] = frozenset()  # a tensor scale's non-constant dims (of `shape`); empty for a scalar


def linear_step(user: Node, cur: Node, tensor_scales: bool = False) -> Optional[Step]:
    """`user` as a linear step of `cur` (see Step), or None: anything else ends the chain.

    The result must keep `cur`'s shape and dtype (no broadcast growth, no type promotion); `alpha` is refused.
    A multiply or divide by a tensor is a step only with `tensor_scales` (the caller then checks `varies`).
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
        if other is None or other is cur:
            return None
        return _scale("mul", other, cur, tensor_scales)
    if t in (aten.div.Tensor, aten.div.Scalar) and a is cur and b is not cur:
        return _scale("div", b, cur, tensor_scales)
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


def _scale(op: str, x: Any, cur: Node, tensor_scales: bool) -> Optional[Step]:
    """A multiply/divide of `cur` by `x` as a Step: `x` a scalar, or a tensor not computed from the chain."""
    if _scalar(x, cur):
        return Step(op, x, shape(cur))
    if not tensor_scales or not isinstance(x, Node) or val(x) is None or depends_on(x, cur):
        return None
    xs, cs = shape(x), shape(cur)
    if len(xs) > len(cs):
        return None
    lead = len(cs) - len(xs)  # broadcasting aligns the trailing dims
    return Step(op, x, cs, frozenset(lead + i for i, n in enumerate(xs) if n != 1))


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
    """A linear chain from a node (its Steps) ending in a sum or mean over `dims` (REDUCTIONS).

    Elementwise the chain is `y -> a * y + t` (`affine`), `a` the product of its scales (constant along `dims`
    unless the caller folds it into its operator: linear_chain_reduction's `fold`), `t` its added terms, each
    scaled by the scales after it.
    """

    steps: list[tuple[Node, Step]]
    red: Node
    dims: list[int]
    keepdim: bool
    shape: tuple[int, ...]  # the chain's value's (the start's)

    @property
    def mean(self) -> bool:
        return self.red.target is aten.mean.dim

    @property
    def operands(self) -> list[Node]:
        """The steps' tensor operands, in order: the replacement's inputs after the linear operator's own."""
        return [s.operand for _, s in self.steps if isinstance(s.operand, Node)]

    def affine(self, ops: tuple[torch.Tensor, ...] | list[torch.Tensor]) -> tuple[Any, Any]:
        """(a, t): the chain as `y -> a * y + t`, each a number or a tensor that broadcasts into the value.
        `ops`: the values of `operands`."""
        a: Any = 1.0
        t: Any = 0.0
        it = iter(ops)
        for _, s in self.steps:
            v = next(it) if isinstance(s.operand, Node) else s.operand
            if s.op == "mul":
                a, t = a * v, t if _zero(t) else t * v
            elif s.op == "div":
                a, t = a / v, t if _zero(t) else t / v
            elif s.op == "neg":
                a, t = -a, -t
            elif s.op == "add":
                t = t + v
            elif s.op == "sub":
                t = t - v
            elif s.op == "rsub":
                a, t = -a, v - t
            else:
                raise ValueError(s.op)
        return a, t

    def finish(self, y: torch.Tensor, ops: tuple[torch.Tensor, ...] | list[torch.Tensor], count: int,
               scaled: bool = False) -> torch.Tensor:
        """The chain applied to `y`, the start's *sum* over `dims` (keepdim; `count` values each), as the reduction
        is linear: `a * y` (`a` constant along `dims`; `scaled`: the caller's operator applied it already), plus
        the added terms summed over the same dims (a number `count` times); then the mean's division and the
        reduction's own shape. `ops`: the values of `operands`."""
        a, t = self.affine(ops)
        if not scaled and not (is_number(a) and a == 1.0):
            y = y * a
        if isinstance(t, torch.Tensor):
            y = y + torch.broadcast_to(t, self.shape).sum(self.dims, keepdim=True)
        elif t != 0.0:
            y = y + t * count
        if self.mean:
            y = y / count
        return y if self.keepdim else y.reshape(shape(self.red))


def _zero(t: Any) -> bool:
    return is_number(t) and t == 0.0


def linear_chain_reduction(start: Node, fold: frozenset[int] = frozenset()) -> Optional[ChainReduction]:
    """`start`, linear steps (linear_step, tensor scales too), then a sum or mean with no dtype argument as the
    chain's only user. A tensor scale must be constant along the reduced dims (the sum then takes it out), or,
    where the caller folds the chain's scale into its operator, vary along `fold` alone (say, per channel)."""
    steps, cur = chain(start, lambda user, c: linear_step(user, c, tensor_scales=True))
    red = only_user(cur)
    if red is None or red.target not in REDUCTIONS or kwargs_of(red).get("dtype") is not None or len(args_of(red)) < 2:
        return None
    keepdim = bool(args_of(red)[2]) if len(args_of(red)) > 2 else bool(kwargs_of(red).get("keepdim", False))
    rank = len(shape(start))
    dims = norm_dims(args_of(red)[1], rank)
    allowed = fold or frozenset(range(rank)) - set(dims)  # where a tensor scale may vary
    if any(not s.varies <= allowed for _, s in steps):
        return None
    return ChainReduction(steps, red, dims, keepdim, shape(start))
