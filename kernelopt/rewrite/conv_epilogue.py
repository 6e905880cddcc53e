"""A convolution with a pointwise epilogue as plain data, and its reference.

`ConvEpilogue` (JSON-able) holds the convolution's parameters, the shapes of the external tensors the epilogue
reads (a bias, a per-channel scale), and the epilogue as steps, each an op over earlier values (`Ref`: the
convolution's output, an earlier step, an external tensor, a number). rewrite/conv_regions.py reads one out
of the ATen graph; kernels/cudnn_fused.py builds it as one cuDNN call.

`reference(e, x, w, b, operands)` computes it with torch's own ops, in the order the graph does: on float64
inputs it is exactly the value the graph computes, and on any device it is what a fused call is compared with.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Optional, Sequence

import torch

#: the epilogue's ops: name -> arity (a `where` reads a mask and two values)
POINTWISE: dict[str, int] = {
    "add": 2, "sub": 2, "mul": 2, "div": 2, "max": 2, "min": 2, "pow": 2,
    "gt": 2, "lt": 2, "ge": 2, "le": 2, "where": 3,
    "relu": 1, "sigmoid": 1, "tanh": 1, "exp": 1, "log": 1, "log1p": 1, "erf": 1, "neg": 1, "abs": 1,
    "sqrt": 1, "rsqrt": 1, "reciprocal": 1, "gelu": 1, "silu": 1, "leaky_relu": 1,
}


@dataclass(frozen=True)
class Ref:
    kind: str  # conv | step | operand | const
    index: int = 0
    value: float = 0.0

    @staticmethod
    def conv() -> "Ref":
        return Ref("conv")

    @staticmethod
    def step(i: int) -> "Ref":
        return Ref("step", i)

    @staticmethod
    def operand(i: int) -> "Ref":
        return Ref("operand", i)

    @staticmethod
    def const(v: float) -> "Ref":
        return Ref("const", value=v)


@dataclass
class Step:
    op: str
    args: list[Ref]
    attrs: dict = field(default_factory=dict)


@dataclass
class ConvParams:
    stride: list[int]
    padding: list[int]
    dilation: list[int]
    transposed: bool
    output_padding: list[int]
    groups: int
    bias: bool


@dataclass
class ConvEpilogue:
    conv: ConvParams
    operand_shapes: list[list[int]]
    steps: list[Step]
    dims: int  # spatial dims: 1, 2 or 3

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "ConvEpilogue":
        steps = [Step(s["op"], [Ref(**r) for r in s["args"]], dict(s.get("attrs") or {})) for s in d["steps"]]
        return cls(ConvParams(**d["conv"]), [list(s) for s in d["operand_shapes"]], steps, int(d["dims"]))

    def summary(self) -> str:
        """One line: the convolution and its steps, e.g. `conv2d(s1,p1,g8) -> sub -> exp -> log1p -> ...`."""
        c = self.conv
        kind = "conv_transpose" if c.transposed else "conv"
        head = f"{kind}{self.dims}d(s{_short(c.stride)},p{_short(c.padding)},g{c.groups}{',bias' if c.bias else ''})"
        return " -> ".join([head] + [s.op for s in self.steps])


def _short(v: Sequence[int]) -> str:
    return str(v[0]) if len(set(v)) == 1 else "x".join(map(str, v))


# --------------------------------------------------------------------------- the reference

def convolution(e: ConvEpilogue, x: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor]) -> torch.Tensor:
    c = e.conv
    return torch.ops.aten.convolution(x, w, b if c.bias else None, c.stride, c.padding, c.dilation, c.transposed,
                                      c.output_padding, c.groups)


def reference(e: ConvEpilogue, x: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor],
              operands: Sequence[torch.Tensor]) -> torch.Tensor:
    """The region's value, with torch's ops in the graph's order (exactly the graph's value in float64)."""
    return run_steps(e, convolution(e, x, w, b), operands)


def run_steps(e: ConvEpilogue, y: torch.Tensor, operands: Sequence[torch.Tensor]) -> torch.Tensor:
    aten = torch.ops.aten
    values: list[Any] = []

    def get(r: Ref) -> Any:
        return {"conv": lambda: y, "step": lambda: values[r.index], "operand": lambda: operands[r.index],
                "const": lambda: r.value}[r.kind]()

    unary: dict[str, Any] = {
        "relu": aten.relu, "sigmoid": aten.sigmoid, "tanh": aten.tanh, "exp": aten.exp, "log": aten.log,
        "log1p": aten.log1p, "erf": aten.erf, "neg": aten.neg, "abs": aten.abs, "sqrt": aten.sqrt,
        "rsqrt": aten.rsqrt, "reciprocal": aten.reciprocal, "silu": aten.silu}
    for s in e.steps:
        a = [get(r) for r in s.args]
        if s.op in unary:
            v = unary[s.op](a[0])
        elif s.op == "gelu":
            v = aten.gelu(a[0], approximate=s.attrs.get("approximate", "none"))
        elif s.op == "leaky_relu":
            v = aten.leaky_relu(a[0], s.attrs.get("negative_slope", 0.01))
        elif s.op in ("add", "sub", "mul", "div"):
            v = _binary(s.op, a[0], a[1])
        elif s.op in ("max", "min"):
            v = _extremum(s.op, a[0], a[1])
        elif s.op in ("gt", "lt", "ge", "le"):
            v = getattr(torch, s.op)(a[0], a[1])
        elif s.op == "where":
            v = torch.where(a[0], a[1], a[2])
        elif s.op == "pow":
            v = torch.pow(a[0], a[1])
        else:
            raise ValueError(f"unknown epilogue op {s.op!r}")
        values.append(v)
    return values[-1] if values else y


def _binary(op: str, a: Any, b: Any) -> Any:
    f: Any = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}[op]
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return f(a, b)
    return f(torch.tensor(a), b)


def _extremum(op: str, a: Any, b: Any) -> Any:
    if not isinstance(a, torch.Tensor):  # a number first: max and min are symmetric
        a, b = b, a
    if not isinstance(b, torch.Tensor):  # clamp_min / clamp_max by a number
        return torch.clamp_min(a, b) if op == "max" else torch.clamp_max(a, b)
    return torch.maximum(a, b) if op == "max" else torch.minimum(a, b)
