"""FLOPs and bytes of an ATen graph, from its metadata (nothing runs on a device).

FLOPs are torch's own count (torch.utils.flop_counter: matmuls and convolutions only, the work that matters
here; a matrix-vector product that Inductor's decompositions turn into a multiply and a sum counts 0).
Bytes are those of every tensor the graph materializes — its inputs and each non-view op's output — before
Inductor fuses anything: an upper bound on traffic, comparable before and after a rewrite.
"""
from __future__ import annotations

from dataclasses import dataclass

from torch._guards import detect_fake_mode
from torch.fx import GraphModule
from torch.utils.flop_counter import FlopCounterMode

from kernelopt.rewrite.fx import VIEWS, val


@dataclass
class GraphCost:
    flops: int
    bytes: int


def graph_cost(gm: GraphModule) -> GraphCost:
    total_bytes = 0
    for n in gm.graph.nodes:
        v = val(n)
        if v is not None and (n.op == "placeholder" or (n.op == "call_function" and n.target not in VIEWS)):
            total_bytes += v.numel() * v.element_size()
    return GraphCost(_flops(gm), total_bytes)


def _flops(gm: GraphModule) -> int:
    inputs = [val(n) for n in gm.graph.nodes if n.op == "placeholder"]
    if any(v is None for v in inputs):
        return 0
    mode = detect_fake_mode(inputs)
    if mode is None:
        return 0
    counter = FlopCounterMode(display=False)
    with mode, counter:
        gm(*inputs)
    return int(counter.get_total_flops())
