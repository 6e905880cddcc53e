"""Gate 2 for a whole-graph candidate (a rewritten graph): its outputs against the baseline module's.

The baseline is the original compiled module (Inductor's own code), run on the real weights; the candidate
is the rewritten graph's compiled module, fed the same flat arguments. Both run in this child for each of the
job's seeds, and every output leaf must agree to allclose(1e-3) (docs/architecture.md, Gates).
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
            return GateResult.fail("gate2", f"seed {seed}: the rewritten graph returns {len(got)} outputs, the "
                                   f"baseline {len(expected)}", seed=seed)
        for i, (a, b) in enumerate(zip(got, expected, strict=True)):
            problem = compare_close(a, b, GRAPH_RTOL, GRAPH_ATOL, f"output {i} (seed {seed})")
            if problem:
                return GateResult.fail("gate2", problem, seed=seed, output=i)
    return GateResult.ok("gate2", f"the rewritten graph's outputs match the baseline module's (allclose "
                         f"{GRAPH_RTOL:g}) for seeds {list(req.seeds)}", seeds=list(req.seeds))
