"""Model mode: the stages after loading, for a KernelBench-convention model."""
from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path
from typing import Any, Optional

from kernelopt.agents.session import job_usage
from kernelopt.compiled.autotune_log import AUTOTUNE_FILE, AutotuneSummary
from kernelopt.compiled.capture import CaptureRequest, capture_model
from kernelopt.compiled.compile_pool import CompilePool
from kernelopt.compiled.decompose import KernelGraph, decompose
from kernelopt.compiled.graph import CapturedGraph, Reproduction
from kernelopt.compiled.group import (
    CHAIN_OP,
    LibraryGroup,
    all_groups,
    is_group_name,
    reference_source,
    target_overlaps,
)
from kernelopt.core.outcome import Cause, Outcome
from kernelopt.core.precision import LIBRARY_MODE, declared_precision
from kernelopt.core.text import clip, one_line
from kernelopt.isolation.compile_cache import CACHE_DIR
from kernelopt.load.stage import LoadResult
from kernelopt.pipeline.compile_variants import variants_and_verify
from kernelopt.pipeline.context import JobCancelled, JobContext, JobFailed, JobFallback
from kernelopt.pipeline.gates import gate3_text
from kernelopt.pipeline.gates import gates_3_4 as run_gates_3_4
from kernelopt.pipeline.graph_rewrite import rewrite_and_verify
from kernelopt.pipeline.optimized_module import write_optimized_module
from kernelopt.pipeline.options import JobResult
from kernelopt.pipeline.report import nondeterminism_note, read_safely, replaced_op, write_json, write_kernel_diff
from kernelopt.profiling.baseline import BaselineProfile, ProfileRequest, profile_baseline
from kernelopt.profiling.ncu import NcuRequest, NcuResult, find_ncu, gpu_profiler_lock, ncu_profile
from kernelopt.search.beam import search_kernel
from kernelopt.search.evaluate import ChildEvaluator, EvalContext
from kernelopt.search.generator import Attempt, KernelTarget
from kernelopt.search.registry import applicable, make_generator, outside_job_hint, searches_model_targets
from kernelopt.search.strategy import apply_ncu, fallback_cause, plan_groups, plan_targets, required_kernel_speedup
from kernelopt.verify.precision import (
    deployed_reduced_precision,
    library_math_markers,
    library_mode_markers,
    reduced_precision_markers,
)
from kernelopt.verify.stitched_model import StitchedRequest
from kernelopt.verify.waterfall import select_combination


def autotune_when_stopped(workdir: Path) -> AutotuneSummary | None:
    """What the capture child had recorded of Inductor's autotuning when it was stopped (its progress file,
    compiled.autotune_log), read as data: no link followed, a few KB at most, None when absent or malformed."""
    try:
        return AutotuneSummary.from_dict(json.loads(read_safely(Path(workdir) / AUTOTUNE_FILE, limit=4096)))
    except (OSError, ValueError):
        return None


def with_autotune_account(exc: JobFallback, workdir: Path) -> JobFallback:
    """A compile stopped at the time limit, its cause extended by what Inductor had autotuned by then (where the
    child left an account of it); any other fallback as it is."""
    stopped = autotune_when_stopped(workdir) if exc.code is Cause.TIMEOUT else None
    if stopped is None or not stopped.shapes:
        return exc
    return JobFallback(exc.code, f"{exc}; by then {stopped.describe()}")


def capture_baseline(ctx: JobContext, request: CaptureRequest) -> CapturedGraph:
    """The model compiled and captured (`capture_model`, in the job's set-up child).

    Where the job started from earlier jobs' compiler caches (isolation.compile_cache) and the compile failed
    or crashed, the caches are dropped and the model compiled once more without them: a cache never costs a
    job its result (on an H100, a capture from kept caches once failed with a PermissionError on the earlier
    job's directory). A timeout is not retried: the budget is spent.
    """
    def capture() -> CapturedGraph:
        try:
            return ctx.child(capture_model, request, limit_s=1200, what="compiling the model",
                             session=ctx.setup_session)
        except JobFallback as exc:
            raise with_autotune_account(exc, ctx.workdir) from None

    cache = ctx.report.get("compile_cache") or {}
    try:
        return capture()
    except (JobFailed, JobFallback) as exc:
        if not cache.get("files") or (isinstance(exc, JobFallback) and exc.code is not Cause.CRASH):
            raise
        why = clip(one_line(str(exc)), 300)
    cache["dropped"] = why
    ctx.emit("compile", "progress", f"compiling from earlier jobs' compiler caches failed ({why}); "
             "compiling without them")
    ctx.setup_session.close()
    shutil.rmtree(ctx.workdir / CACHE_DIR, ignore_errors=True)
    ctx.setup_session = ctx.session()
    return capture()


def run_model_job(ctx: JobContext, load: LoadResult) -> JobResult:
    opts = ctx.options
    # Model mode searches Triton kernels, so it runs on a GPU; Inductor's CPU backend
    # (C++ kernels, no Triton) still exercises capture, decompose, profile and report.
    device = "cuda" if ctx.device is None or ctx.device.cuda else "cpu"
    with ctx.stage("compile", "torch.compile (Inductor, max-autotune, no CUDA graphs) and capture"):
        cg = capture_baseline(ctx, CaptureRequest(ctx.problem_path, str(ctx.workdir), opts.dtype, device,
                                                  weights=ctx.weights))
        ctx.report["capture"] = {k: v for k, v in cg.__dict__.items() if k != "args"}
        ctx.report["context_timings"] = dict(cg.context_ms)
        cache = ctx.report.get("compile_cache") or {}
        warm = (f" (from {cache['files']} files of earlier jobs' compiler caches)"
                if cache.get("files") and not cache.get("dropped") else "")
        pool = CompilePool.from_dict(cg.compile_pool)
        workers = f" {pool.in_brief()}" if pool is not None else ""
        tuned = AutotuneSummary.from_dict(cg.autotune)
        autotune = f" ({tuned.describe()})" if tuned is not None and tuned.shapes else ""
        ctx.emit("compile", "progress", f"compiled in {cg.compile_seconds:.1f} s{workers}{warm}{autotune}; re-stitch "
                 f"bit-exact: {cg.restitch_bit_exact}", compile_seconds=cg.compile_seconds,
                 compile_cache_files=cache.get("files", 0))
    reproduction = cg.reproduction or (Reproduction.BIT_EXACT if cg.restitch_bit_exact else Reproduction.NO)
    if reproduction == Reproduction.NO:
        diff = "" if cg.restitch_max_abs_diff is None else f" (max |diff| {cg.restitch_max_abs_diff:.3g})"
        raise JobFallback(Cause.NOT_REPRODUCIBLE, "re-executing Inductor's module did not reproduce the compiled "
                          f"output{diff}, and the compiled model reproduces itself closer than that; nothing "
                          "can be verified against it, so the compiler's own code is kept")
    note = nondeterminism_note(ctx.report["capture"])
    if note:
        ctx.emit("compile", "progress", note)
    # the baseline module as captured, before any candidate's child shares the work directory (Gate 3's
    # precision contract compares candidates with it: pipeline/gates.py)
    ctx.baseline_sources.setdefault(str(ctx.workdir), Path(cg.module_path).read_text())
    for stage in (rewrite_and_verify, variants_and_verify):  # whole-model candidates, before the kernel search
        deployed = stage(ctx, cg, load, device)
        if deployed is not None:
            return deployed

    with ctx.stage("decompose", "parsing the output module into kernels and library calls"):
        graph: KernelGraph = decompose(Path(cg.module_path).read_text())
        groups = all_groups(Path(cg.module_path).read_text(), graph)  # library groups, then kernel chains
        kernels = {name: k.kind for name, k in graph.kernels.items()}
        ctx.report["graph"] = {
            "triton_kernels": kernels,
            "library_calls": [s.target for s in graph.library_steps()],
            "fusible_groups": graph.fusible_groups,
            "library_groups": [{"name": g.name, "op": g.op, "anchor": g.anchor_target, "epilogue": g.epilogue,
                                "inputs": g.inputs, "outputs": g.outputs, "dropped": g.dropped,
                                "reason": g.reason} for g in groups if g.op != CHAIN_OP],
            "kernel_chains": [{"name": g.name, "kernels": g.kernels, "inputs": g.inputs, "outputs": g.outputs,
                               "dropped": g.dropped, "reason": g.reason} for g in groups if g.op == CHAIN_OP],
        }
        ctx.emit("decompose", "progress", f"{len(kernels)} Triton kernels, "
                 f"{len(graph.library_steps())} library calls, {len(graph.fusible_groups)} fusible groups")

    with ctx.stage("profile", "baseline profile (torch.profiler, then Nsight Compute where available)"):
        prof: BaselineProfile = ctx.child(
            profile_baseline, ProfileRequest(ctx.problem_path, str(ctx.workdir), list(kernels), opts.dtype, device,
                                             {n: k.arg_names for n, k in graph.kernels.items()},
                                             {s.index: s.line for s in graph.library_steps()}),
            limit_s=600, what="profiling the baseline", session=ctx.setup_session)
        ctx.setup_session.close()  # frees the GPU memory of compiling before the search's children start
        ctx.report["profile"] = prof
        write_json(ctx.workdir / "profile.json", prof)
        generators = _job_generators(ctx)
        declines = group_declines(generators, opts.generators, opts.precision, opts.dtype)
        decisions = sorted(plan_targets(kernels, prof, opts.gamma, opts.generators)
                           + plan_groups(groups, prof, opts.gamma, opts.generators, declines),
                           key=lambda d: -d.share)
        if device == "cuda":
            searched = [d.name for d in decisions if d.name in kernels and d.searched][:NCU_MAX_KERNELS]
            ncu = _ncu_profile(ctx, searched)
            if ncu.kernels:  # which of the model's kernels the figures cover: the searched ones, not all
                ncu.note += f" (the {len(searched)} searched of the model's {len(kernels)} Triton kernel(s))"
            ctx.report["ncu"] = ncu
            ctx.emit("profile", "progress", ncu.note, ncu_seconds=round(ncu.seconds, 1))
            apply_ncu(decisions, ncu.kernels)
        ctx.report["targets"] = decisions
    # Inductor's own code may already compute in reduced precision (e.g. a TF32 template), and so may its
    # library calls under the process's math modes (cuDNN fp32 convolutions run TF32 by PyTorch's default).
    base_markers = reduced_precision_markers(Path(cg.module_path).read_text(), opts.dtype)  # vs the job's dtype
    base_library = library_math_markers(graph.steps, _library_modes(ctx, cg), opts.dtype)
    ctx.report["baseline_reduced_precision"] = base_markers + base_library
    baseline_result: dict[str, Any] = dict(baseline_ms=prof.end_to_end_ms, optimized_ms=prof.end_to_end_ms,
                                           noise_pct=prof.noise_pct,
                                           reduced_precision=bool(base_markers or base_library))
    _write_artifacts(ctx, cg, graph, {})
    cause = fallback_cause(prof, decisions, opts.gamma)
    if cause:
        return JobResult(Outcome.FALLBACK, cause, speedup=1.0, **baseline_result)

    with ctx.stage("search", "searching candidates for each target kernel"):
        ranked, summaries = _search(ctx, cg, graph, prof, [d for d in decisions if d.searched],
                                    {g.name: g for g in groups}, generators)
        ctx.report["search"] = summaries
    faster = {k: v for k, v in ranked.items() if v}
    if not faster:
        ctx.check_cancel()  # a search the user's cancel stopped ends cancelled, not with the budget's cause
        return JobResult(Outcome.FALLBACK, search_cause(summaries, opts.gamma), speedup=1.0, **baseline_result)

    with ctx.stage("verify", "re-stitching and Gates 3-4 on the whole model (ranked waterfall)"):
        return _waterfall(ctx, cg, graph, load, faster, baseline_result, base_markers, groups)


def kernel_wins(attempts: list[Attempt], ranked: list[Attempt], need: float) -> list[Attempt]:
    """The ranked attempts fast enough (kernel speedup >= `need`) to be worth Gates 3-4.

    Each batch of candidates is timed against the baseline kernel in the same rounds, but that is one
    kernel on the same inputs every time: a candidate must beat the median of all its target's baseline
    timings as well as its own batch's. On the H200 one batch's baseline measured 1.521 ms against
    1.391-1.393 ms in every other batch (level1/24): its candidate, 0.998x against those, ranked as a 1.090x
    kernel and cost a whole-model verification that found 0.9955x.
    """
    pooled = [a.baseline_kernel_ms for a in attempts if a.baseline_kernel_ms]
    typical = statistics.median(pooled) if pooled else None
    return [a for a in ranked if a.kernel_ms and a.baseline_kernel_ms
            and min(a.baseline_kernel_ms, typical or a.baseline_kernel_ms) / a.kernel_ms >= need]


def search_cause(summaries: list[dict], gamma: float) -> str:
    """Why a search left no candidate for verification (one summary per searched target), most specific
    first: the gates could not run the baseline; every generator failed; the budget ran out before any
    candidate; none applies; none was fast enough."""
    harness = [(s["target"], s["harness_errors"][0]) for s in summaries
               if s.get("harness_errors") and not s["passed"]]
    if harness:
        target, message = harness[0]
        return (f"{Cause.HARNESS_ERROR}: the gates could not run the baseline of {len(harness)} kernel(s), so no "
                f"candidate could be judged; {target}: {clip(message, 400)}")
    failed = [(s["target"], s["generator_errors"][0]) for s in summaries if s.get("generator_errors")]
    if failed and not any(s["attempts"] for s in summaries):
        target, message = failed[0]  # e.g. an LLM endpoint that cannot be reached, a package not installed
        return f"{Cause.NO_CANDIDATES}: every generator failed before proposing a candidate; {target}: {clip(message, 400)}"
    cut = [s["target"] for s in summaries if s.get("stopped_reason") == "should_stop" and not s["attempts"]]
    if cut and not any(s["attempts"] for s in summaries):  # H200, level1/05 under a 120 s budget
        return (f"{Cause.TIMEOUT}: the job's time budget stopped the search before its first candidate "
                f"({len(cut)} target(s), {cut[0]} first; the rest of the budget is kept for verification): "
                "a longer --time-limit lets it search")
    if summaries and all(s.get("declined") for s in summaries):
        first = summaries[0]
        return (f"{Cause.NO_CANDIDATES}: no generator of this job applies to the {len(summaries)} searched "
                f"target(s); {first['target']}: {clip(first['stopped_reason'], 400)}")
    n = sum(s["passed"] for s in summaries)
    declined = [f"{s['target']}: {s['stopped_reason']}" for s in summaries if s.get("declined")]
    why = f"; no generator applies to {len(declined)} target(s): {clip(declined[0], 400)}" if declined else ""
    return (f"{Cause.NO_FASTER_CANDIDATE}: {n} candidates passed gates 1-2, none fast enough at kernel level to "
            f"lift the model by gamma={gamma} (Amdahl){why}")


def decline_reason(target: KernelTarget, generators: list, names: list[str]) -> str:
    """Why no generator of the job applies to `target`: each one's own reason, then the registered
    generators outside the job that would (a convolution group under the default generators: conv_fp32)."""
    return "; ".join(filter(None, [applicable(g, target) for g in generators] + [outside_job_hint(target, names)]))


def group_declines(generators: list, names: list[str], precision: str, dtype: str):
    """The strategy's test of a library group or kernel chain (search.strategy.plan_groups): why no generator
    of the job applies to it (`decline_reason`), or None when one does."""
    def declines(group: LibraryGroup) -> Optional[str]:
        target = _group_target(group, 0.0, precision)
        target.dtype = dtype
        if any(applicable(g, target) is None for g in generators):
            return None
        return decline_reason(target, generators, names)
    return declines


NCU_MAX_KERNELS = 8  # `--set full` replays a kernel ~38 times: the largest shares only
NCU_BUDGET_SHARE = 0.25  # of the job's remaining time


def _ncu_profile(ctx: JobContext, names: list[str]) -> NcuResult:
    """Nsight Compute on the baseline's largest searched Triton kernels; never ends the job (a note instead).

    Kernels the strategy does not search (near-optimal, too small a share, no generator for their kind) are
    not profiled: each ncu run costs ~20 s of replays, and nothing would read their figures.
    """
    exe = find_ncu()
    if exe is None:
        return NcuResult(False, "ncu not found (KERNELOPT_NCU, PATH, /usr/local/cuda/bin, /opt/nvidia): the "
                                "profile is torch.profiler's alone")
    if not names:
        return NcuResult(True, "ncu: not run, no Triton kernel is searched (the targets say why)")
    limit = max(60.0, NCU_BUDGET_SHARE * ctx.remaining_s())
    try:
        with gpu_profiler_lock():
            return ctx.child(ncu_profile, NcuRequest(ctx.problem_path, str(ctx.workdir), names, ctx.options.dtype,
                                                     ncu=exe, timeout_s=limit - 30),
                             limit_s=limit, what="profiling with Nsight Compute")
    except (JobFailed, JobFallback) as exc:
        if ctx.remaining_s() <= 1:
            raise
        return NcuResult(False, f"ncu did not complete ({exc}); the profile is torch.profiler's alone")


def _target(cg: CapturedGraph, graph: KernelGraph, name: str, share: float) -> KernelTarget:
    k = graph.kernels[name]
    launch = next(s for s in graph.triton_steps() if s.target == name)
    return KernelTarget(
        name=name, source=k.source, kind=k.kind, arg_names=k.arg_names, signature=k.signature,
        numels=launch.numels, size_hints=k.size_hints, inductor_meta=k.inductor_meta,
        baseline_config=cg.kernel_configs.get(name, {}), aten_ops=k.aten_ops,
        profile={"share": share, "dispatch": dispatch_neighbours(graph, name)},
    )


DISPATCH_NEIGHBOURS = 2  # library calls named on each side of a kernel in the planner's dispatch context


def dispatch_neighbours(graph: KernelGraph, name: str) -> dict:
    """The vendor-library calls launched just before and after kernel `name` (the planner's dispatch context)."""
    steps = graph.steps
    at = next((i for i, s in enumerate(steps) if s.kind == "triton" and s.target == name), None)
    if at is None:
        return {"before": [], "after": []}
    before = [s.target for s in steps[:at] if s.kind == "library"][-DISPATCH_NEIGHBOURS:]
    after = [s.target for s in steps[at + 1:] if s.kind == "library"][:DISPATCH_NEIGHBOURS]
    return {"before": before, "after": after}


def _group_target(group: LibraryGroup, share: float, precision: str) -> KernelTarget:
    """A library group as a search target: launched as `run(*params)` (compiled.group)."""
    return KernelTarget(name=group.name, source=reference_source(group), kind=f"group:{group.op}",
                        arg_names=list(group.arg_names), signature={}, numels=[], aten_ops=[group.op],
                        profile={"share": share}, group=group.to_dict(), precision=precision)


def _job_generators(ctx: JobContext) -> list:
    """The job's generators, made once: the strategy asks them which library groups they apply to, the
    search then runs them."""
    generators = [make_generator(n) for n in ctx.options.generators if searches_model_targets(n)]
    for g in generators:
        ctx.attach(g)  # an agent generator: transcripts, memory, settings, AVOID list (its `applicable` reads them)
    return generators


def _search(ctx: JobContext, cg, graph, prof, decisions, groups: dict[str, LibraryGroup] | None = None,
            generators: list | None = None) -> tuple[dict[str, list[Attempt]], list[dict]]:
    opts = ctx.options
    reserve = ctx.keep_for_verification()
    generators = _job_generators(ctx) if generators is None else generators
    ranked: dict[str, list[Attempt]] = {}
    summaries = []
    for d in decisions:
        ctx.check_cancel()
        if is_group_name(d.name):
            target = _group_target((groups or {})[d.name], d.share, opts.precision)
        else:
            target = _target(cg, graph, d.name, d.share)
            target.precision = opts.precision
            if d.ncu:  # the agents' planner reads Nsight Compute's figures
                target.profile["ncu"] = d.ncu
            target.profile.update({k: v for k, v in (("tier", d.tier), ("roofline_fraction", d.roofline_fraction),
                                                    ("roofline_ceiling", d.roofline_ceiling)) if v is not None})
        target.dtype = opts.dtype
        usable = [g for g in generators if applicable(g, target) is None]
        if not usable:
            summaries.append({"target": d.name, "attempts": 0, "passed": 0, "best_kernel_speedup": None,
                              "declined": True,  # no generator applies (e.g. gemm_fp32 on a bf16 GEMM)
                              "stopped_reason": decline_reason(target, generators, opts.generators)})
            continue
        config = ctx.search_config(len(usable))  # at least one chain per generator that applies to this kernel
        evaluator = ChildEvaluator(EvalContext(ctx.problem_path, str(ctx.workdir), target, opts.seeds, opts.dtype,
                                               rho_max=opts.rho_max),
                                   scratch=str(ctx.workdir), read_only=ctx.sandbox_read_only,
                                   timeout_s=max(60.0, min(600.0, ctx.remaining_s())))

        def on_attempt(a: Attempt, name: str = d.name) -> None:
            ctx.record_attempt(name, a)

        def on_chain_stop(stop: dict, name: str = d.name) -> None:
            ctx.record_chain_stop(name, stop)

        try:
            result = search_kernel(target, usable, evaluator, config, on_attempt=on_attempt,
                                   on_chain_stop=on_chain_stop,
                                   should_stop=lambda: ctx.remaining_s() < reserve or bool(
                                       ctx.should_cancel and ctx.should_cancel()))
        finally:
            evaluator.close()
        share = d.share
        if target.is_group and result.ranked and result.ranked[0].baseline_kernel_ms and prof.gpu_total_ms:
            # the group's measured time (Gate 2's timing of its reference) replaces the profile's bound
            share = min(d.share, result.ranked[0].baseline_kernel_ms / prof.gpu_total_ms)
        need = required_kernel_speedup(share, opts.gamma)
        wins = kernel_wins(result.attempts, result.ranked, need)
        ranked[d.name] = wins
        best = result.ranked[0] if result.ranked else None
        summaries.append({
            "target": d.name, "attempts": len(result.attempts),
            "passed": sum(a.passed for a in result.attempts),
            "best_kernel_speedup": (round(best.baseline_kernel_ms / best.kernel_ms, 3)
                                    if best and best.kernel_ms and best.baseline_kernel_ms is not None else None),
            "stopped_reason": result.stopped_reason,
            "required_kernel_speedup": round(need, 4), "candidates_for_verification": len(wins),
            # Gate 2 could not run Inductor's own kernel (out of memory, say): not the candidates' fault.
            "harness_errors": [a.feedback for a in result.attempts if a.metrics.get("harness_error")][:3],
            "generator_errors": result.generator_errors[:3],
        })
    llm_usage = job_usage(generators)  # one entry per LLM session (the job's agents share one)
    if llm_usage:  # token counts per job (and cost where prices are configured)
        ctx.report["llm"] = llm_usage
    return ranked, summaries


def _waterfall(ctx: JobContext, cg, graph: KernelGraph, load: LoadResult, ranked: dict[str, list[Attempt]],
               baseline_result: dict, base_markers: list[str], groups: list[LibraryGroup]) -> JobResult:
    opts = ctx.options
    sources = {a.candidate.id: a.candidate.source for attempts in ranked.values() for a in attempts}
    params = {a.candidate.id: (a.candidate.generator, a.candidate.params) for v in ranked.values() for a in v}
    resolved = {a.candidate.id: a.metrics.get("resolved_method") for v in ranked.values() for a in v}
    verdicts: dict[tuple, dict] = {}
    trace: list[str] = []
    errors: list[JobFallback] = []  # evaluations that ended before a verdict (budget spent, a child crashed)

    cancelled = []

    def evaluate(combination: dict[str, str]) -> tuple[bool, float]:
        # The waterfall records an exception as a failed evaluation; a cancel must end the job.
        if ctx.should_cancel is not None and ctx.should_cancel():
            cancelled.append(True)
            return False, 0.0
        try:
            return gates_3_4(combination)
        except JobFallback as exc:  # a child timed out or crashed: the job's cause says it if nothing else does
            errors.append(exc)
            raise

    def gates_3_4(combination: dict[str, str]) -> tuple[bool, float]:
        replacements = {k: sources[cid] for k, cid in combination.items()}
        req = StitchedRequest(ctx.problem_path, str(ctx.workdir), replacements, precision=opts.precision,
                              rho_max=opts.rho_max, deterministic=load.deterministic, dtype=opts.dtype,
                              library_ops={g.name: g.op for g in groups if g.name in replacements and g.op != CHAIN_OP},
                              library_modes=_library_modes(ctx, cg))
        v = run_gates_3_4(ctx, req, opts.gamma, load=load)
        g3, g4, timing = v.gate3, v.gate4, v.timing
        if g4 is None:
            verdicts[tuple(sorted(combination.items()))] = {"gate3": g3}
            trace.append(f"{combination}: Gate 3 failed: {g3.message}")
            return False, 0.0
        if timing is None:  # refused before any speed was figured (pipeline/gates.py:Gate4Refused)
            verdicts[tuple(sorted(combination.items()))] = {"gate3": g3, "gate4": g4}
            trace.append(f"{combination}: Gate 3 passed ({gate3_text(g3.metrics)}); Gate 4 failed: {g4.message}")
            ctx.emit("verify", "progress", trace[-1])
            return False, 0.0
        verdicts[tuple(sorted(combination.items()))] = {"gate3": g3, "gate4": g4, "timing": timing}
        # the per-round medians behind the speedup and its noise, for anyone who doubts either
        ctx.report.setdefault("gate4_rounds", []).append(
            {"combination": combination, "method": timing.method,
             **{side: [round(t, 5) for t in timing.rounds[side]] for side in ("baseline", "candidate")},
             # the orchestrator's own clock against what the timing processes reported (gate4_perf.check_clock)
             "clock": {k: g4.metrics[k] for k in ("implied_wall_speedup", "observed_wall_speedup",
                                                  "baseline_wall_ms", "candidate_wall_ms") if k in g4.metrics}})
        trace.append(f"{combination}: Gate 3 passed ({gate3_text(g3.metrics)}); Gate 4 speedup "
                     f"{g4.metrics.get('speedup'):.4f}x (noise {g4.metrics.get('noise_pct'):.2f}%): "
                     f"{'pass' if g4.passed else 'fail'}")
        ctx.emit("verify", "progress", trace[-1])
        return g4.passed, float(g4.metrics.get("speedup", 0.0))

    ranked_ids = {k: [a.candidate.id for a in v] for k, v in ranked.items()}
    # a group and the kernels of its epilogue (or two groups sharing a step) never go into one combination
    wf = select_combination(ranked_ids, evaluate, conflicts=target_overlaps(groups),
                            should_stop=lambda: ctx.remaining_s() <= 1)  # nothing more can be verified
    if cancelled:
        raise JobCancelled("cancelled")
    if not wf.trace and not errors:  # stopped before its first evaluation: the budget was already spent
        errors.append(JobFallback(Cause.TIMEOUT, f"time budget of {opts.time_budget_s:.0f} s spent before Gate 3"))
    ctx.report["waterfall"] = trace
    ctx.report["waterfall_steps"] = wf.to_dict()
    chosen = dict(wf.combination or {})
    if chosen:
        v = verdicts[tuple(sorted(chosen.items()))]
        g3, g4, timing = v["gate3"], v["gate4"], v["timing"]
        replacements = {k: sources[cid] for k, cid in chosen.items()}
        _write_artifacts(ctx, cg, graph, replacements)
        # the library calls left in the deployed module: a replaced group's no longer run, except through a
        # replacement that calls the library itself in the caller's math mode (LIBRARY_MODE), stated as ours
        replaced_steps = [i for g in groups if g.name in replacements for i in g.steps]
        in_library_mode = {g.name: g.op for g in groups if g.name in replacements
                           and declared_precision(replacements[g.name]) == LIBRARY_MODE}
        modes = _library_modes(ctx, cg)
        ours = (deployed_reduced_precision(replacements, opts.dtype)
                + library_mode_markers(in_library_mode, modes, opts.dtype))
        markers = ours + library_math_markers(graph.steps, modes, opts.dtype, replaced_steps)
        ctx.report["deployed_reduced_precision"] = markers
        ctx.report["replacement_reduced_precision"] = ours  # the part of it KernelOPT put there
        # every result that uses an emulated (or reduced-precision) GEMM states its method and measured ρ
        ops = {g.name: g.op for g in groups}
        emulation = [{"target": k, "op": ops.get(k), "generator": params[cid][0],
                      "method": params[cid][1].get("method"),
                      "resolved_method": resolved.get(cid),
                      "precision": params[cid][1].get("precision"),
                      "construction": params[cid][1].get("construction"), "rho": g3.metrics.get("rho"),
                      "rho_max_over_seeds": g3.metrics.get("rho_max_over_seeds"), "policy": opts.precision}
                     for k, cid in chosen.items() if params[cid][1].get("method")]
        if emulation:
            ctx.report["emulation"] = emulation
        return JobResult(
            Outcome.OPTIMIZED, f"speedup {g4.metrics['speedup']:.3f}x >= gamma {opts.gamma} with "
            f"{len(chosen)} kernel(s)/group(s) replaced; Gate 3 {gate3_text(g3.metrics)}"
            + "".join(f"; {e['target']}: {replaced_op(e)} by {e['method']} ({e['precision']}), rho "
                      f"{'n/a' if e['rho'] is None else format(e['rho'], '.3g')}" for e in emulation),
            speedup=g4.metrics["speedup"], baseline_ms=timing.median_ms["baseline"],
            optimized_ms=timing.median_ms["candidate"], noise_pct=g4.metrics.get("noise_pct"),
            # Inductor's own reduced-precision code (the baseline source's markers) outside the replacements still runs
            reduced_precision=bool(markers or base_markers))
    outcome, cause, noise = unverified_outcome(list(verdicts.values()), errors, len(wf.trace), opts.gamma)
    # a match is decided by Gate 4's noise: that is the figure the result states, not the profile's
    return JobResult(outcome, cause, speedup=1.0, **{**baseline_result, **({"noise_pct": noise} if noise else {})})


def unverified_outcome(verdicts: list[dict], errors: list[JobFallback], evaluations: int,
                       gamma: float) -> tuple[Outcome, str, Optional[float]]:
    """How a waterfall that deployed nothing ends: outcome, cause, and for a match the Gate 4 noise that
    decided it. `verdicts`: one {"gate3": ..., "gate4": ...} per combination that got one; `errors`:
    evaluations that ended before a verdict (budget spent, a crash).

    Matched if correct combinations were within Gate 4's noise; else the performance gate; else Gate 3;
    and where no combination got a verdict at all, the cause is what stopped them — never "correctness".
    """
    g4s = [v["gate4"] for v in verdicts if "gate4" in v]
    within = [g for g in g4s if g.metrics.get("within_noise")]
    if within:
        best = max(within, key=lambda g: g.metrics.get("speedup", 0.0))
        cause = (f"{Cause.WITHIN_NOISE}: the best correct combination ran {best.metrics.get('speedup', 0.0):.4f}x, "
                 f"within the measured noise ({best.metrics.get('noise_pct', 0.0):.2f}%); the compiler baseline is kept")
        return Outcome.MATCHED, cause, best.metrics.get("noise_pct")
    if g4s:
        fastest = max(g.metrics.get("speedup", 0.0) for g in g4s)
        return (Outcome.FALLBACK, f"{Cause.PERFORMANCE_GATE}: best correct combination {fastest:.3f}x < gamma {gamma}",
                None)
    failed_g3 = sum("gate3" in v for v in verdicts)
    if errors and not failed_g3:
        first = errors[0]
        return Outcome.FALLBACK, (f"{first.code}: no combination of the candidates that passed Gates 1-2 finished "
                                  f"verification ({evaluations} tried): {first}"), None
    unfinished = f"; {len(errors)} more did not finish ({errors[0].code}: {errors[0]})" if errors else ""
    return Outcome.FALLBACK, (f"{Cause.CORRECTNESS_FAILURE}: every combination verified failed Gate 3 "
                              f"({failed_g3} of {evaluations}){unfinished}"), None


def _library_modes(ctx: JobContext, cg: CapturedGraph) -> dict:
    """The math modes the baseline's library calls ran under; none on a CPU, where no cuDNN/cuBLAS runs."""
    return cg.library_math if ctx.device is None or ctx.device.cuda else {}


def _write_artifacts(ctx: JobContext, cg: CapturedGraph, graph: KernelGraph, replacements: dict[str, str]) -> None:
    header = (f"KernelOPT optimized module for {Path(ctx.problem_path).name}: "
              f"{len(replacements)} kernel(s) replaced ({', '.join(replacements) or 'the compiler baseline'}).")
    write_optimized_module(ctx.workdir / "optimized_module.py", cg, ctx.problem_path, replacements, header)
    for p in ctx.workdir.glob("diff_*.diff"):
        p.unlink()
    groups = {g.name: g for g in all_groups(Path(cg.module_path).read_text(), graph)} if any(
        is_group_name(n) for n in replacements) else {}
    for name, src in replacements.items():
        base = reference_source(groups[name]) if name in groups else graph.kernels[name].source
        write_kernel_diff(ctx.workdir, name, base, src, "inductor")
