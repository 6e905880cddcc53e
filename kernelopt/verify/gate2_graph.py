"""Gate 2 for a whole-graph candidate (a rewritten graph): its outputs against the baseline module's.

The baseline is the original compiled module (Inductor's own code), run on the real weights; the candidate
is the rewritten graph's compiled module, fed the same flat arguments. Both run in this child for each of the
job's seeds, and every output leaf must agree to allclose(1e-3) (docs/architecture.md, Gates). With `screen`
on a GPU, both modules are then timed side by side here (interleaved do_bench rounds): a screen that spares
Gates 3-4 a candidate already slower in this child (compiled/variants.py), never a verdict: Gate 4 times the
two apart.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kernelopt.compiled.restitch import ModelContext
from kernelopt.core.compare import compare_close
from kernelopt.verify.result import GateResult

GRAPH_RTOL = GRAPH_ATOL = 1e-3


@dataclass
class GraphGate2Request:
    problem_path: str
    workdir: str
    candidate_dir: str
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    dtype: str = "fp32"
    device: str = "cuda"
    screen: bool = False  # time both modules side by side after the comparison (GPU only)
    what: str = "the rewritten graph"  # the candidate, in the gate's messages


def gate2_graph(req: GraphGate2Request) -> GateResult:
    import torch

    ctx = ModelContext(req.problem_path, req.workdir, req.dtype, req.device)
    cand = ctx.candidate(req.candidate_dir)
    base_mod, cand_mod = ctx.module(), cand.module()
    for seed in req.seeds:
        inputs = ctx.inputs(seed)
        with torch.no_grad():
            torch.manual_seed(seed)
            expected = ctx.run(base_mod, inputs)
            torch.manual_seed(seed)
            got = cand.run(cand_mod, inputs)
        if len(got) != len(expected):
            return GateResult.fail("gate2", f"seed {seed}: {req.what} returns {len(got)} outputs, the "
                                   f"baseline {len(expected)}", seed=seed)
        for i, (a, b) in enumerate(zip(got, expected, strict=True)):
            problem = compare_close(a, b, GRAPH_RTOL, GRAPH_ATOL, f"output {i} (seed {seed})")
            if problem:
                return GateResult.fail("gate2", problem, seed=seed, output=i)
    message = (f"{req.what}'s outputs match the baseline module's (allclose {GRAPH_RTOL:g}) for seeds "
               f"{list(req.seeds)}")
    if not (req.screen and req.device == "cuda"):
        return GateResult.ok("gate2", message, seeds=list(req.seeds))
    from kernelopt.core.timing import bench_interleaved

    inputs = ctx.inputs(req.seeds[0])
    with torch.no_grad():
        timing = bench_interleaved({"baseline": lambda: ctx.run(base_mod, inputs),
                                    "candidate": lambda: cand.run(cand_mod, inputs)}, rounds=3)
    screen = timing.median_ms["baseline"] / timing.median_ms["candidate"]
    return GateResult.ok("gate2", f"{message}; screened side by side in this child: {screen:.3f}x",
                         seeds=list(req.seeds), screen_speedup=screen, screen_ms=dict(timing.median_ms))
