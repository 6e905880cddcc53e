"""One job, stage by stage (docs/architecture.md, Stages): load → compile/capture → decompose → profile →
search → re-stitch + verify → report.

The orchestrating process never touches CUDA or runs submitted code: every such
stage is a typed function run in a child (isolation), with a time limit drawn
from the job's budget. Cancellation is honoured between stages.
"""
from __future__ import annotations

import os
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from kernelopt.agents.memory import EXPERIENCE_FILE, ExperienceMemory
from kernelopt.isolation import ChildError, ChildErrorKind, ChildSession, job_sandbox, run_in_child
from kernelopt.compiled.graph import WEIGHTS_FILE
from kernelopt.load.interpreter import InterpreterProbe, interpreter_cannot_run
from kernelopt.load.problem import ProblemError, UnsupportedGraph, problem_kind
from kernelopt.load.stage import LoadRequest, LoadResult, import_model_file, load_problem
from kernelopt.pipeline.outcome import Cause, Outcome
from kernelopt.pipeline.device import NO_GPU_MESSAGE, DeviceInfo, probe
from kernelopt.pipeline.errors import InputError, require_file
from kernelopt.pipeline.options import (NO_GPU_TIMING, NO_TIMING_FAILED, NO_TIMING_NO_DEVICE, CancelCheck, EventSink,
                              JobEvent, JobOptions, JobResult)
from kernelopt.pipeline.report import JsonLines, render_markdown, to_jsonable, write_json, write_safely
from kernelopt.verify.tolerance import Dtype


class JobCancelled(Exception):
    pass


class JobFailed(Exception):
    """Ends the job with outcome `failed` and this message for the user."""


class JobFallback(Exception):
    """Ends the job with outcome `fallback`: the compiler's own code is deployed."""

    def __init__(self, code: Cause, message: str):
        super().__init__(message)
        self.code = Cause(code)


@dataclass
class JobContext:
    """What every stage of one job shares: paths, options, deadline, sinks."""

    problem_path: str
    workdir: Path
    options: JobOptions
    on_event: Optional[EventSink] = None
    should_cancel: Optional[CancelCheck] = None
    started: float = field(default_factory=time.monotonic)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    report: dict = field(default_factory=dict)
    device: Optional[DeviceInfo] = None
    weights: Optional[str] = None  # the job's copy of the weights file
    # Handed over as plain data by the caller (the service's worker): the LLM settings (agents.llm.LLMSettings;
    # None: the environment's) and the team's AVOID list. The engine knows nothing of where they came from.
    llm_settings: Any = None
    avoid: list[dict] = field(default_factory=list)
    agent_session: Any = None  # agents.session.AgentSession, made by the first agent generator attached

    def __post_init__(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.events = JsonLines(self.workdir / "events.jsonl")
        self.trajectory = JsonLines(self.workdir / "trajectory.jsonl")
        o = self.options
        self.memory = ExperienceMemory(self.workdir / EXPERIENCE_FILE, o.memory_size, o.memory_success,
                                       o.memory_slowdown)
        self.stopped_chains: list[dict] = []
        # Load, compile and profile run one after another in one child: torch, CUDA
        # and the model start once instead of three times (5-10 s each on the H200).
        # Search and verification use fresh children of their own.
        self.setup_session = self.session()

    @property
    def sandbox_read_only(self) -> tuple[str, ...]:
        """What a stage child may read besides its scratch (the work directory): the submission."""
        return (self.problem_path,)

    def session(self, env: dict | None = None) -> ChildSession:
        """A child session confined to this job's work directory."""
        return ChildSession(env, scratch=self.workdir, read_only=self.sandbox_read_only)

    def emit(self, stage: str, kind: str, message: str, **data) -> None:
        event = JobEvent(stage, kind, message, data)
        self.events.write(event)
        if self.on_event is not None:
            self.on_event(event)

    def record_attempt(self, target: str, a) -> None:
        """One candidate's verdict: a trajectory.jsonl record and a progress event."""
        self.trajectory.write({"target": target, "candidate_id": a.candidate.id, "parent": a.candidate.parent,
                               "generator": a.candidate.generator, "plan": a.candidate.description,
                               "params": a.candidate.params, "passed": a.passed, "gate": a.gate,
                               "feedback": a.feedback, "kernel_ms": a.kernel_ms,
                               "baseline_kernel_ms": a.baseline_kernel_ms, "metrics": a.metrics,
                               "chain": a.candidate.chain})
        self.memory.add(target, a)  # the summarizer: one experience item per attempt
        self.emit("search", "progress", f"{target}: {a.candidate.description}: "
                  f"{'ok' if a.passed else 'rejected at ' + a.gate} {a.feedback[:160]}",
                  candidate=a.candidate.id, passed=a.passed)

    def record_chain_stop(self, target: str, stop: dict) -> None:
        """A search chain stopped early (meltdown, generator errors): a trajectory record and an event."""
        rec = {"event": "chain-stopped", "target": target, **stop}
        self.stopped_chains.append(rec)
        self.trajectory.write(rec)
        self.emit("search", "progress", f"{target}: chain {stop['chain']} ({stop['generator']}) stopped: "
                  f"{stop['reason']} after {stop['consecutive_failures']} failures in a row", **stop)

    def attach(self, generator) -> None:
        """Give an agent generator (one with `attach`) this job's directory, cancellation, settings and memory."""
        if hasattr(generator, "attach"):
            generator.attach(self.workdir, self.should_cancel, settings=self.llm_settings, memory=self.memory,
                             avoid=self.avoid, retries=self.options.executor_retries, session=self.agent_session)
            # the job's agent generators share one LLM session: one client, one numbering of transcripts.jsonl
            self.agent_session = getattr(generator, "session", None) or self.agent_session

    def search_config(self, usable: int):
        from kernelopt.search.beam import SearchConfig

        o = self.options
        return SearchConfig(iterations=o.iterations, plans_per_iteration=o.plans_per_iteration,
                            beam_width=o.beam_width, max_candidates=o.max_candidates_per_kernel,
                            chains=max(o.chains, usable), meltdown_failures=o.meltdown_failures)

    def agents_report(self) -> Optional[dict]:
        """What the agents leave in report.json: strategy outcomes (the team's AVOID list is fed from them),
        the AVOID list they were given, chains stopped early, experience items written."""
        if not (self.memory.items or self.avoid or self.stopped_chains):
            return None
        return {"experience_items": self.memory.items, "strategy_outcomes": self.memory.strategy_outcomes(),
                "avoid": self.avoid, "stopped_chains": self.stopped_chains}

    def remaining_s(self) -> float:
        return self.options.time_budget_s - (time.monotonic() - self.started)

    def check_cancel(self) -> None:
        if self.should_cancel is not None and self.should_cancel():
            raise JobCancelled("cancelled")

    def child(self, fn: Callable, arg, *, limit_s: float, what: str, env: dict | None = None,
              session: ChildSession | None = None):
        """Run a stage function in a fresh child (or in `session`'s), bounded by the job's remaining budget."""
        timeout = min(limit_s, self.remaining_s())
        if timeout <= 1:
            raise JobFallback(Cause.TIMEOUT, f"time budget of {self.options.time_budget_s:.0f} s spent before {what}")
        try:
            if session is not None:
                return session.call(fn, arg, timeout_s=timeout)
            return run_in_child(fn, arg, timeout_s=timeout, env=env, scratch=self.workdir,
                                read_only=self.sandbox_read_only)
        except ChildError as exc:
            if isinstance(exc.error, ProblemError):
                raise JobFailed(str(exc.error)) from None
            if isinstance(exc.error, UnsupportedGraph):
                raise JobFallback(Cause(exc.error.code), exc.error.reason) from None
            if exc.kind == ChildErrorKind.TIMEOUT:
                raise JobFallback(Cause.TIMEOUT, f"{what} timed out: {exc.message}") from None
            if exc.kind in (ChildErrorKind.CRASH, ChildErrorKind.PROTOCOL):
                raise JobFallback(Cause.CRASH, f"{what} crashed: {exc.message}") from None
            raise JobFailed(f"{what} failed: {exc.message}\n{exc.traceback[-2000:]}") from None

    @contextmanager
    def stage(self, name: str, message: str):
        self.check_cancel()
        self.emit(name, "stage_started", message)
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.stage_seconds[name] = round(self.stage_seconds.get(name, 0.0) + time.monotonic() - t0, 2)
        self.emit(name, "stage_finished", f"{name} done in {self.stage_seconds[name]:.1f} s")

    def close(self) -> None:
        self.setup_session.close()
        self.events.close()
        self.trajectory.close()


def run_job(problem_path: str, workdir: str | Path, options: JobOptions | None = None,
            on_event: Optional[EventSink] = None, should_cancel: Optional[CancelCheck] = None,
            weights_path: str | Path | None = None, llm_settings: Any = None,
            avoid: list[dict] | None = None) -> JobResult:
    """Run one optimization job; always returns a JobResult and writes report.json.

    `failed` is for a submission that cannot be run (with the reason); every
    other ending deploys either the verified optimized model or the compiler's.
    `weights_path`: a safetensors file loaded into the model (model mode).
    `llm_settings` (agents.llm.LLMSettings) and `avoid` (the team's AVOID list,
    [{"strategy", "attempts", "successes", "jobs"}]) are for the LLM agents.
    Raises InputError, before creating anything, when there is no problem file to
    run (missing, a directory) or `workdir` is not a directory.
    """
    options = options or JobOptions()
    require_file(problem_path, "problem file")
    if weights_path is not None:
        require_file(weights_path, "weights file")
    if Path(workdir).exists() and not Path(workdir).is_dir():
        raise InputError(f"work directory {workdir} is a file")
    ctx = JobContext(str(Path(problem_path).resolve()), Path(workdir).resolve(), options, on_event, should_cancel,
                     llm_settings=llm_settings, avoid=list(avoid or []))
    shutil.copyfile(ctx.problem_path, ctx.workdir / "problem.py")
    if weights_path is not None:
        shutil.copyfile(weights_path, ctx.workdir / WEIGHTS_FILE)
        ctx.weights = str(ctx.workdir / WEIGHTS_FILE)
    ctx.report = {"problem": {"path": ctx.problem_path, "name": Path(problem_path).stem},
                  "options": options.to_dict()}
    try:
        with job_sandbox():  # one sandbox uid for all of this job's children
            result = _run(ctx)
    except JobCancelled:
        result = JobResult(Outcome.FAILED, "cancelled", error="the job was cancelled")
    except JobFailed as exc:
        result = JobResult(Outcome.FAILED, str(exc).split("\n")[0], error=str(exc))
    except JobFallback as exc:
        result = JobResult(Outcome.FALLBACK, f"{exc.code}: {exc}", speedup=1.0)
    except ProblemError as exc:
        result = JobResult(Outcome.FAILED, str(exc), error=str(exc))
    except Exception as exc:  # an engine bug must still end the job with a record of it
        import traceback

        result = JobResult(Outcome.FAILED, f"internal error: {type(exc).__name__}: {exc}",
                           error=traceback.format_exc())
    ctx.setup_session.close()
    reclaim_workdir(ctx.workdir)
    if ctx.device is None:
        result.not_measured(NO_TIMING_NO_DEVICE)
    elif not ctx.device.cuda:
        result.not_measured(NO_GPU_TIMING)  # interpreter times say nothing about a GPU
    elif result.outcome == "failed":
        result.not_measured(NO_TIMING_FAILED)
    result.precision, result.dtype = options.precision, options.dtype
    result.stage_seconds = dict(ctx.stage_seconds)
    agents = ctx.agents_report()
    if agents is not None:
        ctx.report["agents"] = agents
    ctx.report["result"] = result.to_dict()
    ctx.report = to_jsonable(ctx.report)
    write_json(ctx.workdir / "report.json", ctx.report)
    write_safely(ctx.workdir / "report.md", render_markdown(ctx.report))
    # Not following links: the sandboxed children wrote here too (a link may lead where this uid cannot look).
    result.artifacts = sorted(e.name for e in os.scandir(ctx.workdir) if e.is_file(follow_symlinks=False))
    ctx.report["result"]["artifacts"] = result.artifacts
    write_json(ctx.workdir / "report.json", ctx.report)
    ctx.emit("report", "stage_finished", f"{result.outcome}: {result.cause}", outcome=result.outcome,
             speedup=result.speedup)
    ctx.close()
    return result


def reclaim_workdir(workdir: Path) -> None:
    """After the job's children: drop their home and caches, and give the files back to this process's user.

    The children ran as the job's sandbox uid and owned the directory; a user who
    ran `kernelopt optimize` as root gets a directory of their own back.
    """
    from kernelopt.isolation.sandbox import SANDBOX_DIRS, give_to

    for name in SANDBOX_DIRS:
        shutil.rmtree(workdir / name, ignore_errors=True)
    give_to(workdir, os.geteuid())


def _run(ctx: JobContext) -> JobResult:
    with ctx.stage("load", "importing the submission in a child process"):
        ctx.device = ctx.child(probe, None, limit_s=120, what="probing the device", session=ctx.setup_session)
        ctx.report["device"] = ctx.device
        interpreter = not ctx.device.cuda
        if interpreter and problem_kind(ctx.problem_path) == "model":
            # Imported (a broken file is still `failed`), never built: the model may be huge.
            ctx.child(import_model_file, ctx.problem_path, limit_s=300, what="importing the model file",
                      session=ctx.setup_session)
            raise JobFallback(Cause.NO_GPU, f"{NO_GPU_MESSAGE} Nothing was compiled, so the model itself is kept.")
        device = "cpu" if interpreter else "cuda"
        env = {"TRITON_INTERPRET": "1"} if interpreter else None
        if interpreter:  # Triton reads TRITON_INTERPRET when imported: the session must start with it
            ctx.setup_session.close()
            ctx.setup_session = ctx.session(env)
            # bf16 arithmetic on the interpreter can be silently wrong (load.interpreter): say so, not "incorrect"
            why = None if Dtype.parse(ctx.options.dtype) is Dtype.FP32 else ctx.child(interpreter_cannot_run, InterpreterProbe(ctx.problem_path, ctx.options.dtype),
                            limit_s=300, what=f"running the kernel on the Triton interpreter in {ctx.options.dtype}",
                            session=ctx.setup_session)
            if why:
                raise JobFallback(Cause.NO_GPU, f"{why}. Nothing was searched: the original kernel is kept.")
        load: LoadResult = ctx.child(load_problem, LoadRequest(ctx.problem_path, ctx.options.dtype, device,
                                                               ctx.weights),
                                     limit_s=300, what="loading the problem", session=ctx.setup_session)
        ctx.report["load"] = load
        ctx.emit("load", "progress", f"{load.kind} problem {load.name}: outputs {load.output_shapes}",
                 problem_kind=load.kind, deterministic=load.deterministic)
    if load.kind == "kernel":
        from kernelopt.pipeline.kernel_job import run_kernel_job

        ctx.setup_session.close()  # kernel mode's stages run in children of their own
        return run_kernel_job(ctx, load, device, env)
    if interpreter:  # decided by the same parse as above; kept for safety
        raise JobFallback(Cause.NO_GPU, NO_GPU_MESSAGE)
    from kernelopt.pipeline.model_job import run_model_job

    return run_model_job(ctx, load)
