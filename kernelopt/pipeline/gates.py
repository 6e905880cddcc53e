"""Gates 3 and 4 on a whole model, in the job's children: the one sequence every whole-model candidate takes
(a combination of replaced kernels from the waterfall, or a rewritten graph)."""
from __future__ import annotations

import dataclasses
import math
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from kernelopt.compiled.graph import CapturedGraph
from kernelopt.core.outcome import Cause
from kernelopt.core.timing import REP_MS, WARMUP_MS, Timing, merge_timings
from kernelopt.isolation import in_job_threads, job_sandbox
from kernelopt.load.stage import LoadResult
from kernelopt.pipeline.context import JobContext, JobFailed, JobFallback
from kernelopt.verify.gate3_judge import JudgeRequest, judge_gate3
from kernelopt.verify.gate4_perf import MORE_ROUNDS, check_clock, check_performance, needs_more_rounds
from kernelopt.verify.kernel_outputs import KernelOutputsRequest, kernel_outputs
from kernelopt.verify.model_outputs import (
    OutputRole,
    OutputsManifest,
    OutputsRequest,
    candidate_outputs,
    reference_outputs,
)
from kernelopt.verify.precision import whole_graph_judged
from kernelopt.verify.result import GateResult
from kernelopt.verify.stitched_model import StitchedRequest
from kernelopt.verify.timing_apart import (
    KernelSideRequest,
    RoundRequest,
    RoundResult,
    SideReady,
    SideRequest,
    prepare_kernel_side,
    prepare_side,
    time_round,
)


@dataclass
class ModelVerdict:
    gate3: GateResult
    gate4: Optional[GateResult] = None  # None: Gate 3 failed, or no GPU to time on
    timing: Optional[Timing] = None

    @property
    def passed(self) -> bool:
        return self.gate3.passed and self.gate4 is not None and self.gate4.passed


def gate3(ctx: JobContext, req: StitchedRequest) -> GateResult:
    """Gate 3 computed apart: eager's outputs from one child (once per job, in a directory no candidate's child
    can reach), the candidate's from another, the verdict from a third that runs no submitted or generated
    code (verify/model_outputs.py, verify/gate3_judge.py). The three share the job's uid (a job running
    without one, as in a test, holds one here), so the judge can read what the others wrote."""
    with job_sandbox():
        return _gate3(ctx, req)


def _gate3(ctx: JobContext, req: StitchedRequest) -> GateResult:
    seeds = tuple(req.seeds)
    # the baseline's source, for the precision contract: read once per job, before this gate's candidate runs
    baseline_source = ctx.baseline_sources.setdefault(
        req.workdir, Path(CapturedGraph.load(req.workdir).module_path).read_text())
    ref_dir = ctx.private_reference_dir()
    out_req = OutputsRequest(req.problem_path, req.workdir, str(ref_dir), list(seeds), req.dtype, req.device)

    def reference() -> tuple[Callable, object, dict]:
        return reference_outputs, out_req, {"scratch": ref_dir, "read_only": ctx.sandbox_read_only + (str(ctx.workdir),)}

    def candidate(cand_dir: Path) -> tuple[Callable, object, dict]:
        return candidate_outputs, dataclasses.replace(
            out_req, out_dir=str(cand_dir), replacements=dict(req.replacements), candidate_dir=req.candidate_dir,
            float64=False), {}

    judged, library_ops = dict(req.replacements), dict(req.library_ops)
    if req.candidate_dir:  # a whole-model candidate: its library-op templates judged as those ops' replacements
        judged, library_ops = whole_graph_judged(
            req.candidate_what, Path(CapturedGraph.load(req.candidate_dir).module_path).read_text(), baseline_source)
    return _judged_apart(ctx, ("model", seeds), ref_dir, Path(req.workdir), reference, candidate,
                         lambda ref, cand, cand_dir: JudgeRequest(
                             str(ref_dir), str(cand_dir), ref, cand, list(seeds), req.precision, req.rho_max, req.dtype,
                             judged, baseline_source, library_ops, dict(req.library_modes)))


def kernel_gate3(ctx: JobContext, source: str, seeds: list[int], precision: str, rho_max: float, dtype: str,
                 device: str, env: dict | None = None) -> GateResult:
    """Gate 3 of a kernel file computed apart: the file's PyTorch `reference` in one child, the candidate file's
    `launch` in another, the verdict from the judge (verify/kernel_outputs.py)."""
    with job_sandbox():
        baseline_source = ctx.baseline_sources.setdefault(ctx.problem_path, Path(ctx.problem_path).read_text())
        ref_dir = ctx.private_reference_dir() / "kernel"
        ref_dir.mkdir(exist_ok=True)
        out_req = KernelOutputsRequest(ctx.problem_path, str(ref_dir), list(seeds), dtype, device)

        def reference() -> tuple[Callable, object, dict]:
            return kernel_outputs, out_req, {"scratch": ref_dir, "env": env}

        def candidate(cand_dir: Path) -> tuple[Callable, object, dict]:
            return kernel_outputs, dataclasses.replace(out_req, out_dir=str(cand_dir), candidate_source=source), {
                "env": env}

        return _judged_apart(ctx, ("kernel", tuple(seeds)), ref_dir, ctx.workdir, reference, candidate,
                             lambda ref, cand, cand_dir: JudgeRequest(
                                 str(ref_dir), str(cand_dir), ref, cand, list(seeds), precision, rho_max, dtype,
                                 {"the candidate": source}, baseline_source))


def _judged_apart(ctx: JobContext, key: tuple, ref_dir: Path, workdir: Path,
                  reference: Callable[[], tuple[Callable, object, dict]],
                  candidate: Callable[[Path], tuple[Callable, object, dict]],
                  judge_request: Callable[[OutputsManifest, OutputsManifest, Path], JudgeRequest]) -> GateResult:
    """The reference's outputs (once per job and `key`) and the candidate's, computed at once in two children;
    the verdict from the judge's child. `reference()`/`candidate(dir)`: (stage function, its request, ctx.child
    keywords). A judge that could not decide for the harness's want (no float64 reference where the verdict
    needs one) raises JobFallback(harness-error): the waterfall counts it as an evaluation that did not finish,
    never as a candidate that failed Gate 3 (pipeline/model_job.py:unverified_outcome)."""
    cand_dir = workdir / "gate3" / f"candidate-{time.monotonic_ns()}"
    cand_dir.mkdir(parents=True, exist_ok=True)
    judge_scratch = Path(tempfile.mkdtemp(prefix="kernelopt-judge-"))
    try:
        def run_reference() -> object:
            if key in ctx.reference_manifests:
                return ctx.reference_manifests[key]
            fn, arg, kw = reference()
            try:
                return ctx.child(fn, arg, limit_s=600, what="Gate 3 (reference)", **kw)
            except JobFailed as exc:  # eager PyTorch on the job's own model and inputs: the harness's failure,
                # never the candidate's (a correctness-failure would blame the model or the kernel)
                raise JobFallback(Cause.HARNESS_ERROR, f"the eager reference could not be computed: {exc}") from None

        def run_candidate() -> object:
            fn, arg, kw = candidate(cand_dir)
            return ctx.child(fn, arg, limit_s=600, what="Gate 3 (candidate)", **kw)

        # the two processes at once (the reference once per job): each starts torch and the model on its own
        ref, cand = in_job_threads(run_reference, run_candidate)
        if not isinstance(ref, OutputsManifest) or ref.role != OutputRole.REFERENCE.value:
            return GateResult.fail("gate3", "the reference's child answered with something that is not a "
                                   "manifest of its outputs", branch="outputs", rho=None)
        ctx.reference_manifests[key] = ref
        if not isinstance(cand, OutputsManifest) or cand.role != OutputRole.CANDIDATE.value:
            # what the candidate's process answers is data to check, never a verdict (a forged GateResult, say)
            return GateResult.fail("gate3", "the candidate's child answered with something that is not a manifest "
                                   f"of its outputs ({type(cand).__name__})", branch="outputs", rho=None)
        verdict = ctx.child(judge_gate3, judge_request(ref, cand, cand_dir), limit_s=600, what="Gate 3 (judge)",
                            scratch=judge_scratch, read_only=(str(ref_dir), str(cand_dir)))
        if not isinstance(verdict, GateResult) or verdict.gate != "gate3":
            raise JobFailed(f"Gate 3's judge answered with {type(verdict).__name__}, not a verdict")
        if verdict.metrics.get("harness_error"):  # undecided for want of the float64 reference: not a verdict
            raise JobFallback(Cause.HARNESS_ERROR, verdict.message)
        return verdict
    finally:
        shutil.rmtree(cand_dir, ignore_errors=True)
        shutil.rmtree(judge_scratch, ignore_errors=True)


def gates_3_4(ctx: JobContext, req: StitchedRequest, gamma: float, timed: bool = True,
              load: LoadResult | None = None) -> ModelVerdict:
    """Gate 3 (against eager, float64 fallback), then Gate 4 (interleaved timing; more rounds when the first
    five cannot tell). `timed=False` stops after Gate 3 (no GPU: no speed is measured). On a GPU, Gate 4's two
    sides set up while Gate 3 computes, for a model `load` says is small enough (`overlap_gate3`)."""
    if not timed:
        return ModelVerdict(gate3(ctx, req))
    g3, opened = gate3_and_timing_sides(ctx, lambda: gate3(ctx, req), model_sides(req),
                                        overlap=overlap_gate3(req.device, load))
    if opened is None:
        return ModelVerdict(g3)
    with opened as sides:
        try:
            timing, walls = sides.rounds(req.rounds)
            g4 = check_performance(timing.rounds["baseline"], timing.rounds["candidate"], gamma)
            if needs_more_rounds(g4):  # too noisy to tell from 5 rounds: measure more, decide on all of them
                more, more_walls = sides.rounds(MORE_ROUNDS)
                timing = merge_timings(timing, more)
                walls = {side: walls[side] + more_walls[side] for side in walls}
                g4 = check_performance(timing.rounds["baseline"], timing.rounds["candidate"], gamma)
        except Gate4Refused as exc:
            return ModelVerdict(g3, GateResult.fail("gate4", str(exc), gamma=gamma), None)
    clock = check_clock(timing.rounds["baseline"], timing.rounds["candidate"], walls["baseline"],
                        walls["candidate"])
    g4.metrics.update(clock.metrics)
    if g4.passed and not clock.passed:
        g4 = GateResult.fail("gate4", clock.message, **g4.metrics)
    return ModelVerdict(g3, g4, timing)


#: the first round's input seed (Gates 2-3 use the job's seeds 101-103; a round's inputs are other ones)
ROUND_SEED = 7001

SIDES = ("baseline", "candidate")
#: a side's set-up request: its name -> (the stage function its session runs, its request)
SideFn = Callable[[str], tuple[Callable, object]]


class Gate4Refused(Exception):
    """A timing round whose candidate did not compute the model's outputs: Gate 4 fails, with this reason."""


def probes_disagree(baseline: list[float], candidate: list[float]) -> str | None:
    """Why a round's candidate outputs are not the baseline's (None when they agree within 5% of the outputs'
    scale: Gate 3 already judged the candidate's accuracy, in any dtype; this only shows the timed calls did the
    model's work on the round's inputs)."""
    if len(baseline) != len(candidate):
        return f"{len(candidate)} probed values, the baseline's {len(baseline)}"
    finite = [abs(b) for b in baseline if math.isfinite(b)]
    scale = max(finite, default=0.0) + 1e-6
    for i, (b, c) in enumerate(zip(baseline, candidate, strict=True)):
        if not (math.isfinite(b) and math.isfinite(c)):
            if not (b == c or (math.isnan(b) and math.isnan(c))):
                return f"probe {i}: {c!r} where the baseline gives {b!r}"
        elif abs(b - c) > 5e-2 * scale:
            return f"probe {i}: {c:.6g} where the baseline gives {b:.6g}"
    return None


def model_sides(req: StitchedRequest) -> SideFn:
    """A model's two sides: the captured module as compiled, and with the candidate's replacements."""
    def side_request(side: str) -> tuple[Callable, object]:
        return prepare_side, SideRequest(req.problem_path, req.workdir, side, dict(req.replacements),
                                         req.candidate_dir, req.dtype, req.device)

    return side_request


def kernel_sides(ctx: JobContext, source: str, dtype: str, device: str) -> SideFn:
    """A kernel file's two sides: the submitted file's `launch` and the candidate file's."""
    def side_request(side: str) -> tuple[Callable, object]:
        return prepare_kernel_side, KernelSideRequest(ctx.problem_path, side, source, dtype, device)

    return side_request


#: Gate 4's sides set up during Gate 3 only for a problem whose parameters and inputs take at most this much
#: (at fp32): four processes hold it at once then (Gate 3's two children, Gate 4's two sides), two otherwise
OVERLAP_MAX_BYTES = 4 << 30


def overlap_gate3(device: str, load: LoadResult | None) -> bool:
    """Whether Gate 4's sides may set up while Gate 3 computes: on a GPU (on the CPU both would share the
    cores), for a problem whose size the load stage measured and found within `OVERLAP_MAX_BYTES`."""
    if device != "cuda" or load is None:
        return False
    elements = load.parameter_count + sum(math.prod(shape) for shape in load.input_shapes)
    return 4 * elements <= OVERLAP_MAX_BYTES


def gate3_and_timing_sides(ctx: JobContext, gate3_fn: Callable[[], GateResult], side_request: SideFn,
                           env: dict | None = None, *, overlap: bool) -> tuple[GateResult, Optional["TimingSides"]]:
    """Gate 3's verdict and, where it passed, Gate 4's two sides set up (the caller closes them). With `overlap`
    (`overlap_gate3`) the sides set up while Gate 3 computes (`gate3_while_timing_sets_up`); without, after a
    passing Gate 3 only."""
    if not overlap:
        g3 = gate3_fn()
        if not g3.passed:
            return g3, None
    sides = TimingSides(ctx, side_request, env)
    try:
        if overlap:
            g3 = gate3_while_timing_sets_up(gate3_fn, sides)
        else:
            sides.prepare()
    except BaseException:
        sides.close()
        raise
    if not g3.passed:
        sides.close()
        return g3, None
    return g3, sides


def gate3_while_timing_sets_up(gate3_fn: Callable[[], GateResult], sides: "TimingSides") -> GateResult:
    """Gate 3, with Gate 4's two sides set up at once (each builds its module and compiles, as Gate 3's children
    do: one process's start-up less on the job's clock). A set-up that failed counts only where Gate 3 passed:
    a candidate Gate 3 refused ends with Gate 3's verdict. Gate 3's own exception is raised as it would be."""
    def set_up() -> Optional[BaseException]:
        try:
            sides.prepare()
        except Exception as exc:  # noqa: BLE001 - raised below, after Gate 3's verdict is known
            return exc
        return None

    g3, failed = in_job_threads(gate3_fn, set_up)
    assert isinstance(g3, GateResult)
    if g3.passed and isinstance(failed, BaseException):
        raise failed
    return g3


class TimingSides:
    """Gate 4's two child sessions, one per side, as the job's sandbox uid (held for their life, and shared with
    Gate 3's children where they run meanwhile: see gate3). Started by the thread that creates this (a
    session's process lives as long as the thread that started it: a worker thread of `in_job_threads` would
    take it along), set up by `prepare` on any thread, then timed in rounds interleaved by this process."""

    def __init__(self, ctx: JobContext, side_request: SideFn, env: dict | None = None) -> None:
        self.ctx, self.side_request = ctx, side_request
        self.sandbox = job_sandbox().__enter__()
        self.sessions = {side: ctx.session(env) for side in SIDES}
        self.ready: dict[str, SideReady] = {}
        try:
            for s in self.sessions.values():
                s.start()
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> "TimingSides":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        try:
            for s in self.sessions.values():
                s.close()
        finally:
            self.sandbox.__exit__(None, None, None)

    def prepare(self) -> None:
        """Each side's module built and called a few times (at once), its estimate of one call checked."""
        def prepare(side: str) -> Callable[[], object]:
            fn, arg = self.side_request(side)
            return lambda: self.ctx.child(fn, arg, limit_s=600, what=f"Gate 4 timing ({side} set-up)",
                                          session=self.sessions[side])

        for side, r in zip(SIDES, in_job_threads(*(prepare(side) for side in SIDES)), strict=True):  # at once
            if not isinstance(r, SideReady) or not (0 < r.estimate_ms < math.inf):
                raise JobFallback(Cause.CRASH, f"Gate 4 timing: the {side}'s process answered with no usable "
                                  "estimate of its time")
            self.ready[side] = r
        if {r.method for r in self.ready.values()} not in ({"do_bench"}, {"cpu-wallclock"}):  # a label, not believed
            raise JobFallback(Cause.CRASH, "Gate 4 timing: the two sides' processes named different or unknown "
                              "timing methods")

    def rounds(self, rounds: int) -> tuple[Timing, dict[str, list[float]]]:
        """`rounds` rounds, each side once a round in alternating order, on the same inputs each round:
        (each side's per-round median, this process's wall time per iteration of each round)."""
        assert set(self.ready) == set(SIDES), "prepare() first"
        per_call = self.ready["baseline"].estimate_ms
        iterations = min(max(math.ceil(REP_MS / per_call), 3), 2000)
        warmup = min(max(math.ceil(WARMUP_MS / per_call), 1), 500)
        medians: dict[str, list[float]] = {side: [] for side in SIDES}
        walls: dict[str, list[float]] = {side: [] for side in SIDES}
        for r_i in range(rounds):
            seed = ROUND_SEED + r_i
            probes: dict[str, list[float]] = {}
            for side in (SIDES if r_i % 2 == 0 else SIDES[::-1]):
                t0 = time.monotonic()
                res = self.ctx.child(time_round, RoundRequest(iterations, warmup, seed), limit_s=600,
                                     what=f"Gate 4 timing ({side})", session=self.sessions[side])
                wall = (time.monotonic() - t0) * 1e3 / (iterations + warmup)
                if (not isinstance(res, RoundResult) or len(res.times_ms) != iterations
                        or not all(isinstance(t, float) and 0 < t < math.inf for t in res.times_ms)
                        or not all(isinstance(v, float) for v in res.probes)):
                    raise JobFallback(Cause.CRASH, f"Gate 4 timing: the {side}'s process answered with something "
                                      f"that is not {iterations} timings")
                medians[side].append(statistics.median(res.times_ms))
                walls[side].append(wall)
                probes[side] = res.probes
            why = probes_disagree(probes["baseline"], probes["candidate"])
            if why:
                raise Gate4Refused(f"round {r_i + 1}: the timed candidate's outputs are not the baseline's on the "
                                   f"round's inputs ({why}): its times are not of the model's work")
        return Timing(medians, self.ready["baseline"].method), walls


def gate3_text(metrics: dict) -> str:
    """Gate 3's branch, with rho where that branch computed one (no 'rho None' in a report)."""
    rho = metrics.get("rho")
    return f"{metrics.get('branch')}, rho {rho:.3g}" if rho is not None else str(metrics.get("branch"))
