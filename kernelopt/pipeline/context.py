"""What every stage of one job shares (`JobContext`), and the exceptions that end a job.

The job's orchestration (pipeline/job.py) builds one context and hands it to the kernel-file or
model path (pipeline/kernel_job.py, pipeline/model_job.py); both raise these exceptions to end it.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from kernelopt.agents.memory import EXPERIENCE_FILE, ExperienceMemory
from kernelopt.core.outcome import Cause
from kernelopt.core.text import clip, one_line
from kernelopt.isolation import ChildError, ChildErrorKind, ChildSession, run_in_child
from kernelopt.load.problem import DeviceUnusable, ProblemError, UnsupportedGraph
from kernelopt.pipeline.budget import verify_cost_s, verify_reserve_s
from kernelopt.pipeline.device import DeviceInfo
from kernelopt.pipeline.options import CancelCheck, EventSink, JobEvent, JobOptions
from kernelopt.pipeline.report import JsonLines
from kernelopt.search.beam import SearchConfig

# A candidate's gate feedback in its progress event (the console, the job's event list), on one line: whole up
# to this many characters, else cut at a word boundary with "…" (a compile error's whole text is in
# trajectory.jsonl).
FEEDBACK_CHARS = 400

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
    # Gate 3's reference outputs (verify/model_outputs.py): written once per job by their own child into a
    # private directory outside the work directory, where no candidate's child can reach them
    reference_dir: Optional[Path] = None
    reference_manifests: dict = field(default_factory=dict)  # ("model"|"kernel", seeds) -> OutputsManifest
    baseline_sources: dict = field(default_factory=dict)  # capture workdir (or kernel file) -> its source, read once

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
                  f"{'ok' if a.passed else 'rejected at ' + a.gate} {clip(one_line(a.feedback), FEEDBACK_CHARS)}",
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

    def search_config(self, usable: int) -> SearchConfig:
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

    def keep_for_verification(self) -> float:
        """Seconds the search leaves for re-stitching and Gates 3-4 (`budget.verify_reserve_s`, from this job's
        budget and its own load stage), recorded in the report as `verify_reserve`."""
        load_s = self.stage_seconds.get("load", 0.0)
        reserve = verify_reserve_s(self.options.time_budget_s, load_s)
        self.report["verify_reserve"] = {"seconds": round(reserve, 1), "load_s": load_s,
                                         "expected_evaluation_s": round(verify_cost_s(load_s), 1)}
        return reserve

    def remaining_s(self) -> float:
        return self.options.time_budget_s - (time.monotonic() - self.started)

    def check_cancel(self) -> None:
        if self.should_cancel is not None and self.should_cancel():
            raise JobCancelled("cancelled")

    def child(self, fn: Callable, arg, *, limit_s: float, what: str, env: dict | None = None,
              session: ChildSession | None = None, scratch: str | Path | None = None,
              read_only: tuple[str, ...] | None = None):
        """Run a stage function in a fresh child (or in `session`'s), bounded by the job's remaining budget.

        `scratch`/`read_only`: the child's writable directory and what else it may read (default: the job's
        work directory, and the submission)."""
        timeout = min(limit_s, self.remaining_s())
        if timeout <= 1:
            raise JobFallback(Cause.TIMEOUT, f"time budget of {self.options.time_budget_s:.0f} s spent before {what}")
        try:
            if session is not None:
                return session.call(fn, arg, timeout_s=timeout)
            return run_in_child(fn, arg, timeout_s=timeout, env=env, scratch=scratch or self.workdir,
                                read_only=self.sandbox_read_only if read_only is None else read_only)
        except ChildError as exc:
            if isinstance(exc.error, ProblemError):
                raise JobFailed(str(exc.error)) from None
            if isinstance(exc.error, UnsupportedGraph):
                raise JobFallback(Cause(exc.error.code), exc.error.reason) from None
            if isinstance(exc.error, DeviceUnusable):
                raise JobFallback(Cause.HARNESS_ERROR, f"{what}: {exc.error}") from None
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

    def private_reference_dir(self) -> Path:
        """The job's directory for Gate 3's reference outputs: outside the work directory (no candidate's
        child mounts it), readable by this job only; removed when the job closes."""
        if self.reference_dir is None:
            self.reference_dir = Path(tempfile.mkdtemp(prefix="kernelopt-reference-"))
            os.chmod(self.reference_dir, 0o700)
        return self.reference_dir

    def close(self) -> None:
        if self.reference_dir is not None:
            shutil.rmtree(self.reference_dir, ignore_errors=True)
            self.reference_dir = None
        self.setup_session.close()
        self.events.close()
        self.trajectory.close()
