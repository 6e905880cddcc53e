"""A convolution and the pointwise operations after it, read from the ATen graph as one fusable region.

Inductor runs a convolution as a library call (cuDNN) and every operation after it as Triton kernels that read
the convolution's whole output back from memory. cuDNN can run a convolution with a pointwise chain fused into
its epilogue (the cuDNN frontend's operation graphs: `conv_fprop → bias → add/mul/relu/tanh/…`). What such a
fused call must compute is found here, in the graph Inductor receives: `conv_regions(gm)` lists, per
convolution, the largest set of pointwise nodes after it that

- read only the convolution, each other, numbers and tensors computed without it (a bias, a per-channel scale:
  any shape that broadcasts to the convolution's output without growing it);
- compute values of the convolution's shape (no reduction, pool or view in between);
- hand one value on: only the region's last node is read outside it.

A region is described by a `ConvEpilogue` (rewrite/conv_epilogue.py): plain data, the form a fused call is built
from and the form its reference evaluates. A region the description cannot hold is left out, with the reason.
Nothing is rewritten here: `benchmarks/conv_cudnn_fusion.py` times what cuDNN makes of each region.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from torch.fx import GraphModule, Node

from kernelopt.rewrite.conv_epilogue import POINTWISE, ConvEpilogue, ConvParams, Ref, Step
from kernelopt.rewrite.fx import aten, depends_on, float_convolution, is_number, shape, val

#: the ATen ops a region may hold -> the description's op
_OPS: dict[Any, str] = {
    aten.add.Tensor: "add", aten.sub.Tensor: "sub", aten.mul.Tensor: "mul", aten.div.Tensor: "div",
    aten.relu.default: "relu", aten.sigmoid.default: "sigmoid", aten.tanh.default: "tanh",
    aten.exp.default: "exp", aten.log.default: "log", aten.log1p.default: "log1p", aten.erf.default: "erf",
    aten.neg.default: "neg", aten.abs.default: "abs", aten.sqrt.default: "sqrt", aten.rsqrt.default: "rsqrt",
    aten.reciprocal.default: "reciprocal", aten.clamp_min.default: "max", aten.clamp_max.default: "min",
    aten.maximum.default: "max", aten.minimum.default: "min", aten.gt.Scalar: "gt", aten.lt.Scalar: "lt",
    aten.ge.Scalar: "ge", aten.le.Scalar: "le", aten.gt.Tensor: "gt", aten.lt.Tensor: "lt",
    aten.where.self: "where", aten.gelu.default: "gelu", aten.silu.default: "silu",
    aten.leaky_relu.default: "leaky_relu", aten.pow.Tensor_Scalar: "pow",
}
assert set(_OPS.values()) <= set(POINTWISE), "every op read here is one the description evaluates"


@dataclass
class ConvRegion:
    conv: str  # the convolution node's name
    nodes: list[str]  # the region's pointwise nodes, in graph order; the last is its output
    epilogue: Optional[ConvEpilogue]  # None where it could not be described
    operand_nodes: list[str] = field(default_factory=list)  # the external tensors, in the description's order
    reason: str = ""  # why there is no description, or why the region stops where it does

    @property
    def fusable(self) -> bool:
        return self.epilogue is not None and bool(self.epilogue.steps)


def conv_regions(gm: GraphModule) -> list[ConvRegion]:
    """Every floating-point convolution of `gm` with the pointwise region after it, in graph order."""
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    return [_region(n, order) for n in gm.graph.nodes
            if n.op == "call_function" and float_convolution(n) is not None]


def _region(conv: Node, order: dict[Node, int]) -> ConvRegion:
    out_shape = shape(conv)
    region: list[Node] = [conv]
    members = {conv}
    frontier = sorted(conv.users, key=order.__getitem__)
    while frontier:
        n = frontier.pop(0)
        if n in members or not _joins(n, members, conv, out_shape):
            continue
        members.add(n)
        region.append(n)
        frontier = sorted(set(frontier) | {u for u in n.users if u not in members}, key=order.__getitem__)
    region.sort(key=order.__getitem__)
    # the longest prefix (in graph order) whose only value read outside it is its last node's
    keep = len(region)
    while keep > 1 and _outside_readers(region[:keep]) != [region[keep - 1]]:
        keep -= 1
    body = region[1:keep]
    dropped = len(region) - keep
    if not body:
        why = ("the convolution's output is read by more than its epilogue" if len(conv.users) > 1 else
               "no pointwise operation follows the convolution")
        return ConvRegion(conv.name, [], None, reason=why)
    try:
        epilogue, operands = describe(conv, body)
    except Unsupported as exc:
        return ConvRegion(conv.name, [n.name for n in body], None, reason=str(exc))
    note = f"{dropped} more pointwise node(s) are read elsewhere as well: the region stops before them" if dropped else ""
    return ConvRegion(conv.name, [n.name for n in body], epilogue, [o.name for o in operands], reason=note)


def _joins(n: Node, members: set[Node], conv: Node, out_shape: tuple[int, ...]) -> bool:
    if n.op != "call_function" or n.target not in _OPS or val(n) is None:
        return False
    if tuple(val(n).shape) != out_shape:
        return False
    for a in n.all_input_nodes:
        if a in members:
            continue
        if depends_on(a, conv) or val(a) is None or not _broadcasts(tuple(val(a).shape), out_shape):
            return False
    return True


def _broadcasts(s: tuple[int, ...], out: tuple[int, ...]) -> bool:
    if len(s) > len(out):
        return False
    tail = out[len(out) - len(s):]
    return all(a in (1, b) for a, b in zip(s, tail, strict=True))


def _number(a: Any) -> float:
    if not is_number(a):
        raise Unsupported(f"{a!r} is not a number")
    return float(a)


def _outside_readers(nodes: list[Node]) -> list[Node]:
    inside = set(nodes)
    return [n for n in nodes if any(u not in inside for u in n.users)]


class Unsupported(Exception):
    pass


def describe(conv: Node, body: list[Node]) -> tuple[ConvEpilogue, list[Node]]:
    """The region's description, and its external tensors in the description's order."""
    args = float_convolution(conv)
    if args is None:
        raise Unsupported(f"{conv.name} is not a floating-point convolution")
    x, w, bias, stride, padding, dilation, transposed, output_padding, groups = args
    params = ConvParams(stride=list(stride), padding=list(padding), dilation=list(dilation),
                        transposed=bool(transposed), output_padding=list(output_padding), groups=int(groups),
                        bias=bias is not None)
    index = {conv: Ref.conv()}
    operands: list[Node] = []
    steps: list[Step] = []

    def ref(a: Any) -> Ref:
        if isinstance(a, Node):
            if a in index:
                return index[a]
            if val(a) is not None and val(a).dim() == 0:
                raise Unsupported(f"{a.name} is a 0-dim tensor operand (its value is not known when the call is built)")
            operands.append(a)
            index[a] = Ref.operand(len(operands) - 1)
            return index[a]
        if isinstance(a, bool):
            return Ref.const(float(a))
        if is_number(a):  # an int stays an int: `pow(t, 2)` is computed as the graph computes it
            return Ref.const(a)
        raise Unsupported(f"an argument {a!r} is neither a tensor nor a number")

    for n in body:
        op = _OPS[n.target]
        kw = dict(n.kwargs)
        if op == "gelu":
            args, attrs = [ref(n.args[0])], {"approximate": kw.get("approximate", "none")}
        elif op == "leaky_relu":
            args, attrs = [ref(n.args[0])], {"negative_slope": _number(n.args[1]) if len(n.args) > 1 else 0.01}
        elif op in ("add", "sub") and "alpha" in kw and kw["alpha"] != 1:
            raise Unsupported(f"{n.name}: {op} with alpha={kw['alpha']}")
        else:
            if kw and op not in ("add", "sub"):
                raise Unsupported(f"{n.name}: keyword arguments {sorted(kw)}")
            args, attrs = [ref(a) for a in n.args], {}
        steps.append(Step(op, args, attrs))
        index[n] = Ref.step(len(steps) - 1)
    epilogue = ConvEpilogue(conv=params, operand_shapes=[list(shape(o)) for o in operands], steps=steps,
                            dims=len(shape(conv)) - 2)
    return epilogue, operands
