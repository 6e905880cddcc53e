"""Helpers on the ATen FX graph that Inductor receives (the capture's `inner_compile` graph).

Every node carries `meta["val"]`, a fake tensor with its shape, strides and dtype: the identities read shapes
from there, never from a run. A replacement is written as a plain function of tensors; `splice` traces it to
ATen ops (on meta tensors, so nothing runs) and inserts that graph in place.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence

import torch
from torch.fx import Graph, GraphModule, Node
from torch.fx.experimental.proxy_tensor import make_fx

aten = torch.ops.aten

#: ops that only reinterpret the shape of a contiguous value (row-major order kept)
RESHAPES = {aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.unsqueeze.default,
            aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default}
#: ops whose output aliases or reinterprets their input (no bytes of their own)
VIEWS = RESHAPES | {aten.permute.default, aten.t.default, aten.transpose.int, aten.expand.default,
                    aten.slice.Tensor, aten.select.int, aten.diagonal.default, aten.alias.default}


class NotTraceable(Exception):
    """A replacement that could not be traced to device-independent ATen ops."""


def args_of(n: Node) -> Any:
    """A node's positional arguments, untyped: each identity checks the ones it reads."""
    return n.args


def kwargs_of(n: Node) -> Any:
    return n.kwargs


def val(n: Any) -> Any:
    """The fake tensor a node computes (None for a non-tensor or a node without metadata); typed Any, as the
    metadata is."""
    v = n.meta.get("val") if isinstance(n, Node) else None
    return v if isinstance(v, torch.Tensor) else None


def shape(n: Any) -> tuple[int, ...]:
    v = val(n)
    if v is None:
        raise ValueError(f"{n} has no tensor metadata")
    return tuple(int(s) for s in v.shape)


def float_convolution(n: Node) -> Optional[Any]:
    """The arguments of `n` (x, w, bias, stride, padding, dilation, transposed, output_padding, groups) where it
    is an aten.convolution computing a floating-point tensor, else None."""
    if n.target is not aten.convolution.default or val(n) is None or not val(n).is_floating_point():
        return None
    return args_of(n)


def only_user(n: Node) -> Optional[Node]:
    """The node's single user, or None when it has several (its value is needed elsewhere) or none, or is
    a graph output itself."""
    users = list(n.users)
    return users[0] if len(users) == 1 and users[0].op == "call_function" else None


def is_number(a: Any) -> bool:
    return isinstance(a, (int, float)) and not isinstance(a, bool)


def is_scalar_tensor(n: Any) -> bool:
    v = val(n)
    return v is not None and v.dim() == 0


def depends_on(n: Any, target: Node) -> bool:
    """Whether node `n`'s value is computed from `target`'s (an ancestor search)."""
    if not isinstance(n, Node):
        return False
    seen, todo = set(), [n]
    while todo:
        cur = todo.pop()
        if cur is target:
            return True
        if cur in seen:
            continue
        seen.add(cur)
        todo.extend(a for a in cur.all_input_nodes)
    return False


def norm_dims(dims: Sequence[int] | int | None, rank: int) -> list[int]:
    if dims is None:
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return sorted({d % rank for d in dims}) if rank else []


def ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


def numel(s: Sequence[int]) -> int:
    return math.prod(s)


def splice(gm: GraphModule, before: Node, fn: Callable[..., torch.Tensor], inputs: Sequence[Node]) -> Node:
    """Insert `fn(*inputs)`, traced to ATen ops, before `before`; returns the node of its result.

    `fn` is traced on the inputs' own fake values, in the graph's fake mode, through Inductor's decomposition
    table: the inserted ops are the kind Inductor receives from its own tracing (nothing runs on a device).
    """
    from torch._guards import detect_fake_mode
    from torch._inductor.decomposition import select_decomp_table

    values = [val(n) for n in inputs]
    mode = detect_fake_mode(values)
    if mode is None or any(v is None for v in values):
        raise NotTraceable("the inputs carry no fake values to trace on")
    with mode:
        traced = make_fx(fn, decomposition_table=select_decomp_table(), tracing_mode="real")(*values)
    graph: Graph = gm.graph
    env: dict[Node, Node] = {}
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    env.update(zip(placeholders, inputs, strict=True))
    result: Optional[Node] = None
    with graph.inserting_before(before):
        for n in traced.graph.nodes:
            if n.op == "placeholder":
                continue
            if n.op == "output":
                out = n.args[0]
                out = out[0] if isinstance(out, (list, tuple)) else out
                result = env[out]
                break
            if n.op != "call_function":
                raise NotTraceable(f"the replacement holds a {n.op} node ({n.target})")
            env[n] = graph.node_copy(n, lambda a: env[a])
    if result is None:
        raise NotTraceable("the replacement returned nothing")
    return result
