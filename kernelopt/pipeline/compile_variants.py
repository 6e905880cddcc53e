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
from kernelopt.compiled.variants import CompileVariant, VariantRequest, VariantResult, applicable, capture_variant
from kernelopt.core.text import clip
from kernelopt.load.stage import LoadResult
from kernelopt.pipeline.budget import verify_cost_s
from kernelopt.pipeline.context import JobContext, JobFailed, JobFallback
from kernelopt.pipeline.graph_candidate import (
    GraphGates,
    deploy_graph_candidate,
    gate2_graph_candidate,
    gates_3_4_graph_candidate,
)
from kernelopt.pipeline.options import JobResult

GENERATOR = "compile_variants"  # its name in search/registry.py
# A variant is tried only while its expected cost (a compile of the model and its verification) is at most this
# share of the time the search would otherwise have: on a level-2 convolution model under the bench's 300 s (a
# ~30 s compile) that is about 90 s of ~155 s, and there the kernel search has found nothing to gain on the
# convolutions; a network whose max-autotune compile takes minutes keeps its time for the search instead.
VARIANT_SHARE = 0.6
GATE2_S = 15.0  # Gate 2's child on a variant: the model started, three seeds compared, both modules timed


def variants_and_verify(ctx: JobContext, cg: CapturedGraph, load: LoadResult, device: str) -> Optional[JobResult]:
    """The job's result when a compile variant passes every gate; None to go on with the kernel search.

    Each applicable variant is compiled and taken through Gate 2 (with the side-by-side screen on a GPU) while
    the budget holds it; then Gates 3-4 run on the screened variants, fastest first, until one passes."""
    if GENERATOR not in ctx.options.generators:
        return None
    modes = cg.library_math if device == "cuda" else {}
    chosen = applicable(decompose(Path(cg.module_path).read_text()), device, modes)
    if not chosen:
        return None
    rows: list[dict] = []
    ctx.report["compile_variants"] = rows
    gamma = ctx.options.gamma if device == "cuda" else None
    # a variant costs a compile of the model (the baseline's took cg.compile_seconds) and Gate 2's child; the
    # verification of the one that goes on is counted once
    compile_s = 1.2 * cg.compile_seconds + GATE2_S
    verify_s = verify_cost_s(ctx.stage_seconds.get("load", 0.0))
    screened: list[tuple[float, CompileVariant, str, dict]] = []
    for variant in chosen:
        row: dict = {"variant": variant.name, "options": variant.settings, "touches": variant.touches}
        rows.append(row)
        available_s = ctx.remaining_s() - ctx.keep_for_verification()
        cost_s = compile_s + (0.0 if screened else verify_s)
        if cost_s > VARIANT_SHARE * available_s:
            row["verdict"] = (f"not tried: a compile{'' if screened else ' and verification'} of this model "
                              f"{'is' if screened else 'are'} expected to take {cost_s:.0f} s, more than "
                              f"{VARIANT_SHARE:.0%} of the {max(0.0, available_s):.0f} s the search has besides what "
                              "it keeps for verification")
            ctx.emit("variants", "progress", f"{variant.name}: {row['verdict']}")
            continue
        with ctx.stage("variants", f"the model compiled with {variant.name} ({_options(variant)})"):
            candidate_dir = _compile(ctx, variant, device, row)
            if candidate_dir is None:
                continue
            try:
                why = gate2_graph_candidate(ctx, candidate_dir, row, device, _what(variant), screen_gamma=gamma)
            except (JobFailed, JobFallback) as exc:  # a child that crashed or timed out ends the variant, not the job
                if ctx.remaining_s() <= 1:
                    raise
                why = f"Gate 2 did not finish: {clip(str(exc), 400)}"
            if why is not None:
                row["verdict"] = why
                ctx.emit("variants", "progress", f"{variant.name}: {why}")
                continue
            speed = float(row["gate2"].metrics.get("screen_speedup") or 0.0)
            row["verdict"] = "passed Gate 2" + (f", screened at {speed:.3f}x" if speed else "")
            screened.append((speed, variant, candidate_dir, row))
    for i, (_, variant, candidate_dir, row) in enumerate(sorted(screened, key=lambda c: -c[0])):
        # the first one's verification was counted before its compile; another one needs the budget for its own
        if i and ctx.remaining_s() - ctx.keep_for_verification() < verify_s:
            row["verdict"] += "; not verified: the budget holds no more verifications"
            continue
        with ctx.stage("variants", f"Gates 3-4 on the model compiled with {variant.name}"):
            try:
                gates = gates_3_4_graph_candidate(ctx, candidate_dir, row, load, device, _what(variant))
            except (JobFailed, JobFallback) as exc:
                if ctx.remaining_s() <= 1:
                    raise
                gates = GraphGates(why=f"the gates did not finish: {clip(str(exc), 400)}")
        if gates.verdict is None:
            row["verdict"] = gates.why
            ctx.emit("variants", "progress", f"{variant.name}: {gates.why}")
            continue
        row["verdict"] = "deployed"
        ctx.emit("verify", "progress", f"compile variant {variant.name} deployed: {gates.speedup:.3f}x")
        return deploy_graph_candidate(
            ctx, candidate_dir, gates, f"KernelOPT optimized module for {Path(ctx.problem_path).name}: the model "
            f"compiled by Inductor with {_options(variant)} ({variant.name}).",
            f"with the model compiled by Inductor with {_options(variant)} ({variant.name}: {variant.touches})")
    return None


def _compile(ctx: JobContext, variant: CompileVariant, device: str, row: dict) -> Optional[str]:
    """The variant's capture directory, or None (it did not compile, or compiled to the baseline's code)."""
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
        return None
    row.update(compile_seconds=vr.compile_seconds, note=vr.note)
    ctx.emit("variants", "progress", vr.note, compile_seconds=round(vr.compile_seconds, 1))
    if not vr.candidate_dir:
        row["verdict"] = vr.note
    return vr.candidate_dir


def _what(variant: CompileVariant) -> str:
    return f"the model compiled with {variant.name}"


def _options(variant: CompileVariant) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in variant.settings.items())
