"""Single-kernel mode: a Triton kernel file (`launch`, `reference`, `get_inputs`).

The whole file is the unit: candidates are variants of it with the same
`launch` interface. Gate 2 compares a candidate's launch with the original's
on three seeds (and checks the inputs are left untouched); Gate 3 compares it
with the PyTorch reference (float64 fallback); Gate 4 times both launches.
Runs on a GPU, or on the Triton interpreter where there is none (correctness
only: the interpreter's times say nothing about a GPU).
"""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from kernelopt.agents.session import job_usage
from kernelopt.compiled.kernel_io import clone_arg
from kernelopt.core.outcome import Cause, Outcome
from kernelopt.core.timing import bench_interleaved
from kernelopt.core.tolerance import gate2_tolerance
from kernelopt.load.helion_file import helion_kernels
from kernelopt.load.problem import dtype_from_name, import_problem, make_inputs, output_leaves
from kernelopt.load.stage import LoadResult
from kernelopt.pipeline.budget import search_stopped_before_a_candidate
from kernelopt.pipeline.context import JobContext
from kernelopt.pipeline.gates import (
    Gate4Refused,
    gate3_and_timing_sides,
    kernel_gate3,
    kernel_sides,
    overlap_gate3,
)
from kernelopt.pipeline.options import NO_GPU_TIMING, JobResult
from kernelopt.pipeline.report import write_kernel_diff, write_safely
from kernelopt.search.beam import search_kernel
from kernelopt.search.evaluate import ChildEvaluator, EvalBatch, EvalContext
from kernelopt.search.generator import Attempt, CandidateGenerator, KernelTarget
from kernelopt.search.generators.helion_config import HelionConfigGenerator, SpaceFn
from kernelopt.search.generators.helion_space import HelionSpace, HelionSpaceRequest, helion_space
from kernelopt.search.registry import applicable, make_kernel_file_generator
from kernelopt.verify.gate2_kernel import check_kernel_outputs
from kernelopt.verify.gate4_perf import check_clock, check_performance
from kernelopt.verify.kernel_outputs import import_source
from kernelopt.verify.precision import reduced_precision_markers
from kernelopt.verify.result import GateResult


def _import_source(source: str, tag: str):
    return import_source(source, tag)  # one naming of candidate files: verify/kernel_outputs.py


def _clone(xs: list) -> list:
    return [clone_arg(x) for x in xs]


def evaluate_kernel_file_batch(batch: EvalBatch) -> list[Attempt]:
    """Child side: Gates 1-2 on each candidate file, then time the survivors."""
    c = batch.context
    dtype = dtype_from_name(c.dtype)
    tol = gate2_tolerance(c.dtype)
    original = import_problem(c.problem_path, module_name="kernelopt_kfile_original")
    inputs_by_seed = {s: make_inputs(original, s, c.device, dtype) for s in c.seeds}
    attempts, passing = [], {}
    for cand in batch.candidates:
        try:
            mod = _import_source(cand.source, "cand")
            with _no_grad():
                output_leaves(mod.launch(*_clone(inputs_by_seed[c.seeds[0]])))
        except Exception as exc:  # Gate 1: does not compile or launch
            attempts.append(Attempt(cand, False, "gate1", f"{type(exc).__name__}: {exc}"[:2000]))
            continue
        with _no_grad():
            g2 = check_kernel_outputs(mod.launch, original.launch, inputs_by_seed.__getitem__, c.seeds,
                                      rtol=tol.rtol, atol=tol.atol)
        if not g2.passed:
            attempts.append(Attempt(cand, False, "gate2", g2.message, metrics=g2.metrics))
            continue
        attempts.append(Attempt(cand, True, "timed", "passed gates 1-2", metrics=g2.metrics))
        passing[cand.id] = mod
    if passing:
        xs = _clone(inputs_by_seed[c.seeds[0]])
        fns = {"baseline": lambda: original.launch(*xs)}
        for cid, mod in passing.items():
            fns[cid] = (lambda m: (lambda: m.launch(*xs)))(mod)
        with _no_grad():
            timing = bench_interleaved(fns, rounds=3, warmup_ms=5.0, rep_ms=25.0)
        for a in attempts:
            if a.passed:
                a.kernel_ms, a.baseline_kernel_ms = timing.median_ms[a.candidate.id], timing.median_ms["baseline"]
                a.metrics["timing_method"] = timing.method
    return attempts


def _no_grad():
    import torch

    return torch.no_grad()


def _best_kernel_speedup(ranked: list[Attempt]) -> float | None:
    """The best candidate's kernel-level speedup, where it was timed on a GPU (None on the interpreter)."""
    best = ranked[0] if ranked else None
    if best is None or not best.kernel_ms or not best.baseline_kernel_ms \
            or best.metrics.get("timing_method") != "do_bench":
        return None
    return round(best.baseline_kernel_ms / best.kernel_ms, 3)


def _helion_space_fn(ctx: JobContext, device: str, env: dict | None) -> SpaceFn:
    """Helion's configuration space around some seed configs, read in a sandboxed child (the file runs there)."""
    calls = itertools.count()  # each round's random points differ, and a rerun of the job draws the same ones

    def space(seeds: dict[str, list[dict]], depth: int, n_random: int) -> HelionSpace:
        req = HelionSpaceRequest(ctx.problem_path, ctx.options.dtype, device, seeds, n_random, next(calls), depth)
        return ctx.child(helion_space, req, limit_s=max(60.0, min(300.0, ctx.remaining_s() / 4)),
                         what="reading Helion's configuration space", env=env)

    return space


def run_kernel_job(ctx: JobContext, load: LoadResult, device: str, env: dict | None) -> JobResult:
    opts = ctx.options
    source = Path(ctx.problem_path).read_text()
    # The load child could write here: never copy through a link or into a FIFO it left.
    original = Path(ctx.problem_path).read_bytes()
    write_safely(ctx.workdir / "baseline_module.py", original)
    write_safely(ctx.workdir / "optimized_module.py", original)
    helion = helion_kernels(source)  # none for a Triton kernel file (the load child imported it: it parses)
    if helion:  # what the report says of it: a Helion kernel, the config each kernel ran under (else Helion's default)
        ctx.report["helion"] = {"kernels": [k.name for k in helion],
                                "file_configs": {k.name: k.pinned for k in helion},
                                "autotuning": "off in every child (HELION_AUTOTUNE_EFFORT=none): a kernel the file "
                                              "pins no config for runs Helion's default config"}
    target = KernelTarget(name=load.name, source=source, kind="kernel-file",
                          arg_names=[], signature={}, numels=[], precision=opts.precision, dtype=opts.dtype)
    generators: list[CandidateGenerator] = []
    reasons: list[str] = []
    for name in opts.generators:
        gen = make_kernel_file_generator(name)
        if gen is None:
            reasons.append(f"{name}: it does not apply to kernel files")
            continue
        ctx.attach(gen)  # an agent generator: transcripts, memory, settings, AVOID list (before `applicable`)
        if isinstance(gen, HelionConfigGenerator):
            gen.space = _helion_space_fn(ctx, device, env)
        reason = applicable(gen, target)
        if reason:
            reasons.append(f"{name}: {reason}")
            continue
        generators.append(gen)
    if not generators:
        return JobResult(Outcome.FALLBACK, f"{Cause.NO_CANDIDATES}: {'; '.join(reasons)}", speedup=1.0)
    names = ", ".join(g.name for g in generators)
    reserve = ctx.keep_for_verification()
    with ctx.stage("search", f"search over the kernel file ({names})"):
        evaluator = ChildEvaluator(EvalContext(ctx.problem_path, str(ctx.workdir), target, opts.seeds, opts.dtype,
                                               device), batch_fn=evaluate_kernel_file_batch, env=env or {},
                                   scratch=str(ctx.workdir), read_only=ctx.sandbox_read_only,
                                   timeout_s=max(60.0, min(900.0, ctx.remaining_s())))
        config = ctx.search_config(len(generators))

        def on_attempt(a: Attempt) -> None:
            ctx.record_attempt(target.name, a)

        try:
            result = search_kernel(target, generators, evaluator, config, on_attempt=on_attempt,
                                   on_chain_stop=lambda stop: ctx.record_chain_stop(target.name, stop),
                                   should_stop=lambda: ctx.remaining_s() < reserve or bool(
                                       ctx.should_cancel and ctx.should_cancel()))
        finally:
            evaluator.close()
            llm_usage = job_usage(generators)  # one entry per LLM session (the job's agents share one)
            if llm_usage:  # token counts per job (and cost where prices are configured)
                ctx.report["llm"] = llm_usage
        ctx.report["search"] = [{"target": target.name, "attempts": len(result.attempts),
                                 "passed": sum(a.passed for a in result.attempts),
                                 "best_kernel_speedup": _best_kernel_speedup(result.ranked),
                                 "stopped_reason": result.stopped_reason, "notes": result.notes,
                                 "not_applicable": reasons}]
    if not result.attempts and result.stopped_reason == "should_stop":
        ctx.check_cancel()  # a cancelled job ends cancelled, not timed out
        why = search_stopped_before_a_candidate(opts.time_budget_s, ctx.stage_seconds.get("load", 0.0), reserve)
        return JobResult(Outcome.FALLBACK, f"{Cause.TIMEOUT}: {why}", speedup=1.0)
    if not result.ranked:
        return JobResult(Outcome.FALLBACK, f"{Cause.NO_FASTER_CANDIDATE}: none of {len(result.attempts)} candidates passed "
                         "gates 1-2", speedup=1.0)
    best = result.ranked[0]
    if helion:
        ctx.report["helion"]["best_configs"] = best.candidate.params.get("configs")
    with ctx.stage("verify", "Gate 3 against the PyTorch reference, Gate 4 timing (each computed apart)"):
        def gate3() -> GateResult:
            return kernel_gate3(ctx, best.candidate.source, [101, 102, 103], opts.precision, opts.rho_max, opts.dtype,
                                device, env)

        if device != "cuda":  # no timing: run_job records that no speed was measured
            g3, opened = gate3(), None
        else:  # Gate 4's sides build while Gate 3 computes where the inputs are small enough
            sides_fn = kernel_sides(ctx, best.candidate.source, opts.dtype, device)
            g3, opened = gate3_and_timing_sides(ctx, gate3, sides_fn, env, overlap=overlap_gate3(device, load))
        ctx.report["waterfall"] = [f"{best.candidate.description}: Gate 3 {'passed' if g3.passed else 'failed'}: "
                                   f"{g3.message}"]
        if not g3.passed:
            return JobResult(Outcome.FALLBACK, f"{Cause.CORRECTNESS_FAILURE}: {g3.message}", speedup=1.0)
        if opened is None:
            return JobResult(Outcome.FALLBACK, f"{Cause.NO_GPU}: the best candidate passed Gates 1-3 on the Triton "
                             "interpreter; speed cannot be measured without a GPU, so the original kernel is kept",
                             timing="not-measured", timing_note=NO_GPU_TIMING)
        with opened as sides:
            try:
                timing, walls = sides.rounds(5)
            except Gate4Refused as exc:
                return JobResult(Outcome.FALLBACK, f"{Cause.PERFORMANCE_GATE}: {exc}", speedup=1.0)
    g4 = check_performance(timing.rounds["baseline"], timing.rounds["candidate"], opts.gamma)
    clock = check_clock(timing.rounds["baseline"], timing.rounds["candidate"], walls["baseline"], walls["candidate"])
    ctx.report["gate4_rounds"] = [{"method": timing.method, "baseline": timing.rounds["baseline"],
                                   "candidate": timing.rounds["candidate"], "clock": clock.metrics}]
    if g4.passed and not clock.passed:
        g4 = GateResult.fail("gate4", clock.message, **g4.metrics)
    times: dict[str, Any] = dict(baseline_ms=timing.median_ms["baseline"], noise_pct=g4.metrics.get("noise_pct"))
    if not g4.passed:
        outcome = Outcome.MATCHED if g4.metrics.get("within_noise") else Outcome.FALLBACK
        return JobResult(outcome, f"{Cause.PERFORMANCE_GATE}: {g4.message}", speedup=1.0,
                         optimized_ms=times["baseline_ms"], **times)
    write_safely(ctx.workdir / "optimized_module.py", best.candidate.source)
    if helion:  # the deployed file pins these: it never autotunes at load
        ctx.report["helion"]["deployed_configs"] = best.candidate.params.get("configs")
    write_kernel_diff(ctx.workdir, target.name, source, best.candidate.source, "original")
    markers = reduced_precision_markers(best.candidate.source, opts.dtype)  # the whole deployed file is ours
    ctx.report["deployed_reduced_precision"] = ctx.report["replacement_reduced_precision"] = markers
    return JobResult(Outcome.OPTIMIZED, f"speedup {g4.metrics['speedup']:.3f}x >= gamma {opts.gamma}",
                     speedup=g4.metrics["speedup"], optimized_ms=timing.median_ms["candidate"],
                     reduced_precision=bool(markers), **times)
