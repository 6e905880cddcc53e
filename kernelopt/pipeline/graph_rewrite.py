"""The rewrite stage in a model job: the catalogue's whole-graph candidate, through the gates, before the
kernel search (docs/architecture.md, Graph rewrites).

Gate 1 is the rewrite stage itself (the rewritten graph compiled and re-ran reproducibly); Gate 2 compares it
with the baseline module on the real weights; Gates 3-4 are the whole-model gates every candidate takes. A
rewrite that passes all four is deployed and the job ends; one that does not leaves its verdicts in the
report and the job goes on to the kernel search. Without a GPU, Gates 1-3 still run and no speed is claimed.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from kernelopt.compiled.graph import CapturedGraph
from kernelopt.core.outcome import Outcome
from kernelopt.core.text import clip
from kernelopt.load.stage import LoadResult
from kernelopt.pipeline.context import JobContext, JobFailed, JobFallback
from kernelopt.pipeline.gates import gate3_text, gates_3_4
from kernelopt.pipeline.optimized_module import write_optimized_module
from kernelopt.pipeline.options import JobResult
from kernelopt.rewrite.stage import RewriteRequest, RewriteResult, rewrite_model
from kernelopt.verify.gate2_graph import GraphGate2Request, gate2_graph
from kernelopt.verify.precision import reduced_precision_markers
from kernelopt.verify.stitched_model import StitchedRequest

GENERATOR = "graph_rewrite"  # its name in search/registry.py


def rewrite_and_verify(ctx: JobContext, cg: CapturedGraph, load: LoadResult, device: str) -> Optional[JobResult]:
    """The job's result when the rewritten graph passes every gate; None to go on with the kernel search."""
    opts = ctx.options
    if GENERATOR not in opts.generators:
        return None
    with ctx.stage("rewrite", "exact graph rewrites from the catalogue, before compilation"):
        try:
            rw: RewriteResult = ctx.child(
                rewrite_model, RewriteRequest(ctx.problem_path, str(ctx.workdir), opts.dtype, device,
                                              weights=ctx.weights),
                # in the set-up session: torch, CUDA and the model are up already (a fresh child cost ~5 s of
                # the 8.3 s this stage took on an H100 where no identity applied)
                limit_s=max(60.0, 0.4 * ctx.remaining_s()), what="rewriting the graph", session=ctx.setup_session)
        except (JobFailed, JobFallback) as exc:  # never the submission's fault: the capture stage ran it
            if ctx.remaining_s() <= 1:
                raise
            ctx.report["rewrite"] = {"note": f"the rewrite stage did not complete: {clip(str(exc), 500)}"}
            ctx.emit("rewrite", "progress", ctx.report["rewrite"]["note"])
            return None
        report: dict[str, Any] = {**rw.__dict__}
        ctx.report["rewrite"] = report
        for finding in rw.findings:
            ctx.emit("rewrite", "progress", f"finding: {finding}")
        ctx.emit("rewrite", "progress", rw.note, applied=[a["identity"] for a in rw.applied])
    if not rw.candidate_dir:
        return None
    with ctx.stage("verify", "Gates 2-4 on the rewritten graph"):
        try:
            return _verify(ctx, rw, rw.candidate_dir, report, load, device)
        except (JobFailed, JobFallback) as exc:  # a gate's child crashed or timed out: the search may still run
            if ctx.remaining_s() <= 1:
                raise
            return _declined(ctx, report, f"the gates did not finish on the rewritten graph: {clip(str(exc), 500)}")


def _verify(ctx: JobContext, rw: RewriteResult, candidate_dir: str, report: dict, load: LoadResult,
            device: str) -> Optional[JobResult]:
    """Gates 2-4 on the rewritten graph (captured in `candidate_dir`); its deployment when all pass."""
    opts = ctx.options
    g2 = ctx.child(gate2_graph, GraphGate2Request(ctx.problem_path, str(ctx.workdir), candidate_dir,
                                                  list(opts.seeds), opts.dtype, device),
                   limit_s=600, what="Gate 2 (rewritten graph)")
    report["gate2"] = g2
    if not g2.passed:
        return _declined(ctx, report, f"Gate 2 failed: {g2.message}")
    req = StitchedRequest(ctx.problem_path, str(ctx.workdir), {}, precision=opts.precision,
                          rho_max=opts.rho_max, deterministic=load.deterministic, dtype=opts.dtype,
                          device=device, candidate_dir=candidate_dir)
    v = gates_3_4(ctx, req, opts.gamma, timed=device == "cuda")
    report["gate3"] = v.gate3
    if not v.gate3.passed:
        return _declined(ctx, report, f"Gate 3 failed: {v.gate3.message}")
    if v.gate4 is None:
        return _declined(ctx, report, f"Gates 1-3 passed ({gate3_text(v.gate3.metrics)}); Gate 4 not run: "
                         "no GPU, no speed is measured")
    report["gate4"] = v.gate4
    speedup = float(v.gate4.metrics.get("speedup", 0.0))
    if not v.gate4.passed or v.timing is None:
        return _declined(ctx, report, f"Gates 1-3 passed; Gate 4 failed: {v.gate4.message}")
    rewritten = CapturedGraph.load(candidate_dir)
    names = ", ".join(dict.fromkeys(a["identity"] for a in rw.applied))
    write_optimized_module(ctx.workdir / "optimized_module.py", rewritten, ctx.problem_path, {},
                           f"KernelOPT optimized module for {Path(ctx.problem_path).name}: the graph "
                           f"rewritten by exact identities ({names}), compiled by Inductor.")
    markers = reduced_precision_markers(Path(rewritten.module_path).read_text(), opts.dtype)
    ctx.report["deployed_reduced_precision"] = markers
    report["verdict"] = "deployed"
    ctx.emit("verify", "progress", f"rewritten graph deployed: {speedup:.3f}x")
    findings = "".join(f"; finding: {f}" for f in rw.findings)
    return JobResult(
        Outcome.OPTIMIZED, f"speedup {speedup:.3f}x >= gamma {opts.gamma} with the graph rewritten "
        f"({len(rw.applied)} rewrite(s): {names}); Gate 3 {gate3_text(v.gate3.metrics)}{findings}",
        speedup=speedup, baseline_ms=v.timing.median_ms["baseline"], optimized_ms=v.timing.median_ms["candidate"],
        noise_pct=v.gate4.metrics.get("noise_pct"), reduced_precision=bool(markers))


def _declined(ctx: JobContext, report: dict, why: str) -> Optional[JobResult]:
    """Record why the rewritten graph is not deployed; None: the job goes on to the kernel search."""
    report["verdict"] = why
    ctx.emit("verify", "progress", f"rewritten graph not deployed: {why}")
    return None
