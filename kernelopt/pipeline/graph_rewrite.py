"""The rewrite stage in a model job: the catalogue's whole-graph candidate, through the gates, before the
kernel search (docs/architecture.md, Graph rewrites).

Gate 1 is the rewrite stage itself (the rewritten graph compiled and re-ran reproducibly); Gates 2-4 are
pipeline/graph_candidate.py's. A rewrite that passes all four is deployed and the job ends; one that does not
leaves its verdicts in the report and the job goes on. Without a GPU, Gates 1-3 still run and no speed is
claimed.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from kernelopt.compiled.graph import CapturedGraph
from kernelopt.core.text import clip
from kernelopt.load.stage import LoadResult
from kernelopt.pipeline.context import JobContext, JobFailed, JobFallback
from kernelopt.pipeline.graph_candidate import deploy_graph_candidate, gate_graph_candidate
from kernelopt.pipeline.options import JobResult
from kernelopt.rewrite.stage import RewriteRequest, RewriteResult, rewrite_model

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
    gates = gate_graph_candidate(ctx, candidate_dir, report, load, device, "the rewritten graph")
    if gates.verdict is None:
        return _declined(ctx, report, gates.why)
    names = ", ".join(dict.fromkeys(a["identity"] for a in rw.applied))
    report["verdict"] = "deployed"
    ctx.emit("verify", "progress", f"rewritten graph deployed: {gates.speedup:.3f}x")
    findings = "".join(f"; finding: {f}" for f in rw.findings)
    result = deploy_graph_candidate(
        ctx, candidate_dir, gates, f"KernelOPT optimized module for {Path(ctx.problem_path).name}: the graph "
        f"rewritten by exact identities ({names}), compiled by Inductor.",
        f"with the graph rewritten ({len(rw.applied)} rewrite(s): {names})")
    result.cause += findings
    return result


def _declined(ctx: JobContext, report: dict, why: str) -> Optional[JobResult]:
    """Record why the rewritten graph is not deployed; None: the job goes on to the kernel search."""
    report["verdict"] = why
    ctx.emit("verify", "progress", f"rewritten graph not deployed: {why}")
    return None
