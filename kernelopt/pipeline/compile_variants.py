"""The compile-variant stage in a model job: the model compiled again under another of Inductor's options
(compiled/variants.py), each such whole-model candidate through Gates 2-4, after the graph rewrites and before
the kernel search.

Only the variants that can change this module run (a convolution variant where the module calls a
convolution), and each only while the budget holds another compile of the model and its verification. A
variant that compiles to the baseline's own code is dropped at once; one already slower than the baseline in
Gate 2's child goes no further (pipeline/graph_candidate.py); the fastest that passes Gate 4 is deployed and
the job ends. A variant that passes nothing leaves its verdicts in the report, and the job goes on.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from kernelopt.compiled.decompose import decompose
from kernelopt.compiled.graph import CapturedGraph
from kernelopt.compiled.module_parse import op_name
from kernelopt.compiled.variants import CompileVariant, VariantRequest, VariantResult, applicable, capture_variant
from kernelopt.core.text import clip
from kernelopt.load.stage import LoadResult
from kernelopt.pipeline.budget import verify_cost_s
from kernelopt.pipeline.context import JobContext, JobFailed, JobFallback
from kernelopt.pipeline.graph_candidate import GraphGates, deploy_graph_candidate, gate_graph_candidate
from kernelopt.pipeline.options import JobResult

GENERATOR = "compile_variants"  # its name in search/registry.py
# A variant is tried only while its expected cost (a compile of the model and its verification) is at most this
# share of the time the search would otherwise have: on a level-2 convolution model under the bench's 300 s (a
# ~30 s compile) that is about 90 s of ~155 s, and there the kernel search has found nothing to gain on the
# convolutions; a network whose max-autotune compile takes minutes keeps its time for the search instead.
VARIANT_SHARE = 0.6


def library_ops(module_source: str) -> set[str]:
    """The ops of a module's library calls (`convolution`, `addmm`, ...)."""
    return {op_name(s.target) for s in decompose(module_source).library_steps()}


def variants_and_verify(ctx: JobContext, cg: CapturedGraph, load: LoadResult, device: str) -> Optional[JobResult]:
    """The job's result when a compile variant passes every gate; None to go on with the kernel search."""
    if GENERATOR not in ctx.options.generators:
        return None
    chosen = applicable(library_ops(Path(cg.module_path).read_text()), device)
    if not chosen:
        return None
    rows: list[dict] = []
    ctx.report["compile_variants"] = rows
    passed: list[tuple[CompileVariant, str, GraphGates]] = []
    # one variant costs a compile of the model (the baseline's took cg.compile_seconds) and its verification
    cost_s = 1.2 * cg.compile_seconds + verify_cost_s(ctx.stage_seconds.get("load", 0.0))
    for variant in chosen:
        row: dict = {"variant": variant.name, "options": dict(variant.options), "touches": variant.touches}
        rows.append(row)
        available_s = ctx.remaining_s() - ctx.keep_for_verification()
        if cost_s > VARIANT_SHARE * available_s:
            row["verdict"] = (f"not tried: a compile and verification of this model are expected to take "
                              f"{cost_s:.0f} s, more than {VARIANT_SHARE:.0%} of the {max(0.0, available_s):.0f} s the "
                              "search has besides what it keeps for verification")
            ctx.emit("variants", "progress", f"{variant.name}: {row['verdict']}")
            continue
        with ctx.stage("variants", f"the model compiled with {variant.name} ({_options(variant)})"):
            try:
                vr: VariantResult = ctx.child(
                    capture_variant, VariantRequest(ctx.problem_path, str(ctx.workdir), variant.name, ctx.options.dtype,
                                                    device, weights=ctx.weights),
                    limit_s=max(60.0, 0.4 * ctx.remaining_s()), what=f"compiling the model ({variant.name})",
                    session=ctx.setup_session)
            except (JobFailed, JobFallback) as exc:  # never the submission's fault: the capture stage ran it
                if ctx.remaining_s() <= 1:
                    raise
                row["verdict"] = f"the variant did not compile: {clip(str(exc), 400)}"
                ctx.emit("variants", "progress", f"{variant.name}: {row['verdict']}")
                continue
            row.update(compile_seconds=vr.compile_seconds, note=vr.note)
            ctx.emit("variants", "progress", vr.note, compile_seconds=round(vr.compile_seconds, 1))
            if not vr.candidate_dir:
                row["verdict"] = vr.note
                continue
            try:
                gates = gate_graph_candidate(ctx, vr.candidate_dir, row, load, device, f"the model compiled with "
                                             f"{variant.name}", screen_gamma=ctx.options.gamma)
            except (JobFailed, JobFallback) as exc:
                if ctx.remaining_s() <= 1:
                    raise
                gates = GraphGates(why=f"the gates did not finish: {clip(str(exc), 400)}")
            row["verdict"] = "passed Gates 2-4" if gates.verdict else gates.why
            ctx.emit("variants", "progress", f"{variant.name}: {row['verdict']}")
            if gates.verdict is not None:
                passed.append((variant, vr.candidate_dir, gates))
    if not passed:
        return None
    variant, candidate_dir, gates = max(passed, key=lambda p: p[2].speedup)
    next(r for r in rows if r["variant"] == variant.name)["verdict"] = "deployed"
    ctx.emit("verify", "progress", f"compile variant {variant.name} deployed: {gates.speedup:.3f}x")
    return deploy_graph_candidate(
        ctx, candidate_dir, gates, f"KernelOPT optimized module for {Path(ctx.problem_path).name}: the model "
        f"compiled by Inductor with {_options(variant)} ({variant.name}).",
        f"with the model compiled by Inductor with {_options(variant)} ({variant.name}: {variant.touches})")


def _options(variant: CompileVariant) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in variant.options.items())
