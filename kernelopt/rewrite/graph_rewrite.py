"""Apply the catalogue to an ATen graph until no identity matches; say what changed and what it found.

`rewrite_graph` is the pure part of the rewrite stage (no compile, no device): the capture's
`inner_compile` hands it the graph Inductor is about to compile (rewrite/stage.py).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Optional, Sequence

from torch._guards import detect_fake_mode
from torch.fx import GraphModule, Node
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

from kernelopt.core.text import clip
from kernelopt.rewrite.catalogue import CATALOGUE
from kernelopt.rewrite.cost import GraphCost, graph_cost
from kernelopt.rewrite.fx import NotTraceable, aten, splice, val
from kernelopt.rewrite.match import Identity, Rewrite

MAX_REWRITES = 64  # a bound on the fixpoint loop; each rewrite removes work, so real graphs stop far sooner


@dataclass
class AppliedRewrite:
    identity: str
    where: str
    flops_before: int
    flops_after: int
    bytes_before: int
    bytes_after: int


class Dependence:
    """How the graph's outputs depend on one of its inputs."""

    FULL = "full"
    FINITE_ONLY = "finite-only"  # only through whether its values are finite (x - x)
    NONE = "none"


@dataclass
class GraphRewrite:
    applied: list[AppliedRewrite] = field(default_factory=list)
    before: Optional[GraphCost] = None
    after: Optional[GraphCost] = None
    # placeholder index -> Dependence, for inputs the outputs do not fully depend on
    dependence: dict[int, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # identities that matched but could not be spliced

    def to_dict(self) -> dict:
        return asdict(self)


def rewrite_graph(gm: GraphModule, catalogue: Sequence[Identity] = CATALOGUE) -> GraphRewrite:
    """Rewrite `gm` in place with every identity of `catalogue` that matches, to a fixpoint."""
    cost = graph_cost(gm)  # of the graph as it stands: each rewrite's "after" is the next one's "before"
    result = GraphRewrite(before=cost)
    skipped: set[tuple[str, str]] = set()
    while len(result.applied) < MAX_REWRITES:
        found = _first_match(gm, catalogue, skipped)
        if found is None:
            break
        node, rw = found
        try:
            new = splice(gm, rw.end, rw.fn, rw.inputs)
        except (NotTraceable, RuntimeError, TypeError, ValueError) as exc:  # the identity's function failed to trace
            skipped.add((rw.identity, node.name))
            result.errors.append(f"{rw.identity} at {rw.where}: {type(exc).__name__}: {clip(str(exc), 200)}")
            gm.graph.eliminate_dead_code()  # whatever was spliced is unused: the graph is as it was
            continue
        rw.end.replace_all_uses_with(new)
        gm.graph.eliminate_dead_code()
        gm.recompile()
        propagate(gm)
        after = graph_cost(gm)
        result.applied.append(AppliedRewrite(rw.identity, rw.where, cost.flops, after.flops, cost.bytes, after.bytes))
        cost = after
    result.after = cost
    result.dependence = input_dependence(gm)
    return result


def _first_match(gm: GraphModule, catalogue: Sequence[Identity], skipped: set) -> Optional[tuple[Node, Rewrite]]:
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        for identity in catalogue:
            if (identity.name, node.name) in skipped:
                continue
            rw = identity.match(node)
            if rw is not None:
                return node, rw
    return None


def propagate(gm: GraphModule) -> None:
    """Recompute every node's fake value (spliced nodes have none) in the graph's own fake mode."""
    inputs = [val(n) for n in gm.graph.nodes if n.op == "placeholder"]
    mode = detect_fake_mode(inputs)
    if mode is None or any(v is None for v in inputs):
        return
    FakeTensorProp(gm, mode=mode).propagate_dont_convert_inputs(*inputs)


def input_dependence(gm: GraphModule) -> dict[int, str]:
    """For each input the outputs do not fully depend on: Dependence.NONE or FINITE_ONLY.

    `x - x` passes on only whether `x` is finite (0 or NaN): a softmax over a dim of size 1 reduces to that.
    """
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    output = next(n for n in gm.graph.nodes if n.op == "output")
    full: set[Node] = set()
    finite: set[Node] = set()
    todo: list[tuple[Node, bool]] = [(a, True) for a in output.all_input_nodes]
    while todo:
        n, is_full = todo.pop()
        seen = full if is_full else finite
        if n in seen or (not is_full and n in full):
            continue
        seen.add(n)
        through_full = is_full and not (n.target is aten.sub.Tensor and len(n.args) == 2 and n.args[0] is n.args[1])
        todo.extend((a, through_full) for a in n.all_input_nodes)
    out = {}
    for i, p in enumerate(placeholders):
        if p not in full:
            out[i] = Dependence.FINITE_ONLY if p in finite else Dependence.NONE
    return out

