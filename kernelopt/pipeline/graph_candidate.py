"""Gates 2-4 on a whole-model candidate captured in its own directory (a rewritten graph, a compile variant),
and its deployment: the one sequence both stages take (pipeline/graph_rewrite.py, pipeline/compile_variants.py).

Gate 1 is the candidate's own capture (compiled and re-ran reproducibly); Gate 2 compares it with the baseline
module on the real weights; Gates 3-4 are the whole-model gates every candidate takes. Without a GPU, Gates 1-3
still run and no speed is claimed.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from kernelopt.compiled.graph import CapturedGraph
from kernelopt.core.outcome import Outcome
from kernelopt.load.stage import LoadResult
from kernelopt.pipeline.context import JobContext
from kernelopt.pipeline.gates import ModelVerdict, gate3_text, gates_3_4
from kernelopt.pipeline.optimized_module import write_optimized_module
from kernelopt.pipeline.options import JobResult
from kernelopt.verify.gate2_graph import GraphGate2Request, gate2_graph
from kernelopt.verify.precision import reduced_precision_markers
from kernelopt.verify.stitched_model import StitchedRequest


@dataclass
class GraphGates:
    """A whole-model candidate's verdicts: `verdict` when every gate passed, else `why` it is not deployed."""

    verdict: Optional[ModelVerdict] = None
    why: str = ""

    @property
    def speedup(self) -> float:
        assert self.verdict is not None and self.verdict.gate4 is not None
        return float(self.verdict.gate4.metrics.get("speedup", 0.0))


def gate_graph_candidate(ctx: JobContext, candidate_dir: str, report: dict, load: LoadResult, device: str,
                         what: str, screen_gamma: Optional[float] = None) -> GraphGates:
    """Gates 2-4 on the candidate captured in `candidate_dir`, each verdict recorded in `report`. With
    `screen_gamma` (on a GPU), Gate 2's child also times both modules side by side and a candidate below that
    speedup there goes no further (a screen, not a verdict: Gate 4 decides)."""
    why = gate2_graph_candidate(ctx, candidate_dir, report, device, what, screen_gamma)
    if why is not None:
        return GraphGates(why=why)
    return gates_3_4_graph_candidate(ctx, candidate_dir, report, load, device, what)


def gate2_graph_candidate(ctx: JobContext, candidate_dir: str, report: dict, device: str, what: str,
                          screen_gamma: Optional[float] = None) -> Optional[str]:
    """Gate 2 (and the screen, with `screen_gamma` on a GPU), recorded in `report`: None when the candidate
    goes on to Gates 3-4, else why not."""
    opts = ctx.options
    g2 = ctx.child(gate2_graph, GraphGate2Request(ctx.problem_path, str(ctx.workdir), candidate_dir,
                                                  list(opts.seeds), opts.dtype, device,
                                                  screen=screen_gamma is not None, what=what),
                   limit_s=600, what=f"Gate 2 ({what})")
    report["gate2"] = g2
    if not g2.passed:
        return f"Gate 2 failed: {g2.message}"
    screened = g2.metrics.get("screen_speedup")
    if screen_gamma is not None and screened is not None and screened < screen_gamma:
        return (f"Gate 2 passed; screened at {screened:.3f}x against the baseline in Gate 2's child (below "
                f"{screen_gamma:g}): not sent to Gates 3-4")
    return None


def gates_3_4_graph_candidate(ctx: JobContext, candidate_dir: str, report: dict, load: LoadResult, device: str,
                              what: str) -> GraphGates:
    """Gates 3-4 on a candidate that passed Gate 2, recorded in `report`. Gate 3 judges the module's convolution
    and GEMM templates as replacements of those ops, under the math modes the baseline's calls ran in."""
    opts = ctx.options
    modes = CapturedGraph.load(str(ctx.workdir)).library_math if device == "cuda" else {}
    req = StitchedRequest(ctx.problem_path, str(ctx.workdir), {}, precision=opts.precision,
                          rho_max=opts.rho_max, deterministic=load.deterministic, dtype=opts.dtype,
                          device=device, candidate_dir=candidate_dir, candidate_what=what, library_modes=modes)
    v = gates_3_4(ctx, req, opts.gamma, timed=device == "cuda", load=load)
    report["gate3"] = v.gate3
    if not v.gate3.passed:
        return GraphGates(why=f"Gate 3 failed: {v.gate3.message}")
    if v.gate4 is None:
        return GraphGates(why=f"Gates 1-3 passed ({gate3_text(v.gate3.metrics)}); Gate 4 not run: no GPU, no speed "
                          "is measured")
    report["gate4"] = v.gate4
    if not v.gate4.passed or v.timing is None:
        return GraphGates(why=f"Gates 1-3 passed; Gate 4 failed: {v.gate4.message}")
    return GraphGates(verdict=v)


def deploy_graph_candidate(ctx: JobContext, candidate_dir: str, gates: GraphGates, header: str,
                           cause: str) -> JobResult:
    """The job's `optimized` result: the candidate's module written as optimized_module.py (`header` its first
    line), `cause` following the speedup in the result's words."""
    v = gates.verdict
    assert v is not None and v.timing is not None and v.gate4 is not None
    captured = CapturedGraph.load(candidate_dir)
    write_optimized_module(ctx.workdir / "optimized_module.py", captured, ctx.problem_path, {}, header)
    markers = reduced_precision_markers(Path(captured.module_path).read_text(), ctx.options.dtype)
    ctx.report["deployed_reduced_precision"] = markers
    speedup = gates.speedup
    return JobResult(
        Outcome.OPTIMIZED, f"speedup {speedup:.3f}x >= gamma {ctx.options.gamma} {cause}; Gate 3 "
        f"{gate3_text(v.gate3.metrics)}",
        speedup=speedup, baseline_ms=v.timing.median_ms["baseline"], optimized_ms=v.timing.median_ms["candidate"],
        noise_pct=v.gate4.metrics.get("noise_pct"), reduced_precision=bool(markers))
