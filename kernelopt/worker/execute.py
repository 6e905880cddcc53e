"""Run one queued job of the service: claim it, run the engine in a child, record, finish.

`execute_job` is the one function every dispatcher calls (a Celery task, a thread
of the embedded dispatcher). The flow:

1. **Claim** the job in the database (queued → running, attempts + 1). A message
   delivered twice, or a job cancelled while queued, finds nothing to claim and
   returns without running anything.
2. **Materialise** the input blob into `data_dir/jobs/<id>/attempt-<n>/input/`;
   the engine writes into `.../attempt-<n>/work/`. Each attempt has its own
   directory, so a run orphaned by a killed worker can never mix its files into
   the attempt that replaced it.
3. **Run** `pipeline.job.run_job` in a child process (`isolation.run_in_child`)
   bounded by `job_time_limit_s`. The parent never imports torch or touches CUDA.
4. Meanwhile a **monitor thread** in the parent heartbeats every
   `heartbeat_interval_s`, tails `work/events.jsonl` into the events table and the
   job's stage/progress, and when a cancel is requested touches the attempt's
   `CANCEL` file, which the child's `should_cancel` checks between stages.
5. **Finish**: engine outcome `failed` → `fail_job` with its message and the
   engine's report as artifacts (or `mark_cancelled` when it stopped for a cancel);
   any other outcome → `finish_job` with the result and the work directory's
   artifacts. Artifacts are copied into the blob store by `worker.artifacts`
   (expected names only, regular files, per-file and per-job size caps; what it
   refuses is named in the result's `skipped_artifacts` and a `warning` event)
   while the monitor keeps beating: it stops only just before the final
   transition. A child
   that timed out or crashed ends as outcome `fallback` with cause `timeout: ...` or
   `crash: ...`, the same mapping the engine uses for its own stages; an error of
   the engine itself ends the job `failed`. A job is never left running by a worker
   that is still alive; one whose worker died is re-queued by the reaper.
"""
from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import stat
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kernelopt.agents.llm import LLMSettings
from kernelopt.core.outcome import Cause, Outcome, cause_code
from kernelopt.core.text import clip, one_line
from kernelopt.isolation import ChildError, ChildErrorKind, compile_cache, kill_tree, run_in_child
from kernelopt.isolation.child_output import LABEL_ENV
from kernelopt.isolation.sandbox import SandboxPolicy, blocking_ancestor, give_to, lease_uid
from kernelopt.pipeline.job import run_job
from kernelopt.pipeline.options import NO_GPU_TIMING, TIMING_NOT_MEASURED, JobOptions, JobResult, not_measured
from kernelopt.search.registry import uses_llm
from kernelopt.service import job_queries, jobs, strategy_memory
from kernelopt.storage.blobs import BlobStore
from kernelopt.storage.db import make_engine, make_sessionmaker, session_scope
from kernelopt.worker.artifacts import collect_for_job

log = logging.getLogger("kernelopt.worker")

# Rough share of a job's wall time done when each stage starts (docs/architecture.md, Stages).
STAGE_PROGRESS = {"load": 0.02, "compile": 0.1, "decompose": 0.2, "profile": 0.25, "search": 0.3,
                  "restitch": 0.85, "verify": 0.9, "report": 0.98}

# Seconds the engine's own budget leaves before the hard time limit, so a job
# that runs long still ends with the engine's report rather than a kill.
BUDGET_MARGIN_S = 30.0

# What the worker reads of a job's work directory by itself (the artifacts aside: worker.artifacts).
MAX_EVENTS_CHUNK = 1 << 20  # events.jsonl, per read; a longer line is skipped
MAX_EVENTS_CHUNKS_PER_TAIL = 16  # reads per call (the monitor's heartbeat waits meanwhile)
MAX_EVENTS_PER_JOB = 50_000  # recorded into the database; a real job writes a few thousand at most
# Bytes of event text recorded per job (a real job writes well under 1 MB; 150 lines of 1 MiB once grew the
# shared database by 150 MB), and of one event's message and data: the rest is cut, saying so.
MAX_EVENT_BYTES_PER_JOB = 4 << 20
MAX_EVENT_MESSAGE = 4000  # characters
MAX_EVENT_DATA = 16 << 10  # bytes of the data's JSON
MAX_REPORT_BYTES = 16 << 20  # report.json, for the device it ran on


# --------------------------------------------------------------------------- database helpers

_factories: dict[tuple[int, str], Any] = {}
_factories_lock = threading.Lock()


def session_factory(settings):
    """One SQLAlchemy engine + sessionmaker per process and database URL (fork-safe: keyed by pid)."""
    url = settings.effective_database_url
    key = (os.getpid(), url)
    with _factories_lock:
        factory = _factories.get(key)
        if factory is None:
            factory = _factories[key] = make_sessionmaker(make_engine(url))
        return factory


def blob_store(settings):
    return BlobStore(settings.blobs_dir)


def _scope(settings):
    return session_scope(session_factory(settings))


# --------------------------------------------------------------------------- device

def open_work_file(path: Path):
    """A file of a job's work directory, opened for reading as the worker may: a regular file only.

    Sandboxed code writes that directory, and the worker is privileged (root,
    where jobs get their own uids): a name there may have been swapped for a
    link to another team's blob or the service's database, a FIFO (an open
    that never returns) or a device (a read that never ends). Links are not
    followed (O_NOFOLLOW), nothing blocks (O_NONBLOCK), and anything but a
    regular file is refused (OSError).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    f = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        f.close()
        raise OSError(errno.EINVAL, f"{path.name} is not a regular file")
    return f


def ran_on_gpu(workdir: Path, env: dict[str, str] | None) -> bool:
    """Whether the job's engine saw a GPU: its own probe, as its report records it.

    The engine probes the device itself (and runs kernels on the Triton
    interpreter where there is none); the worker only needs the answer to charge
    GPU time. Without a report (the engine died first) a pinned GPU counts.
    """
    try:
        with open_work_file(workdir / "report.json") as f:
            return bool(json.loads(f.read(MAX_REPORT_BYTES))["device"]["cuda"])
    except (OSError, ValueError, KeyError, TypeError):
        return bool((env or {}).get("CUDA_VISIBLE_DEVICES") or os.environ.get("CUDA_VISIBLE_DEVICES"))


# --------------------------------------------------------------------------- the child

@dataclass
class EngineRequest:
    problem_path: str
    workdir: str
    options: dict
    cancel_file: str
    parent_pid: int
    weights_path: str | None = None
    # The LLM settings (agents.llm.LLMSettings as a dict) when the job uses the `llm` generator. They travel
    # as data to the trusted orchestrator: the child's environment is allow-listed (isolation.sandbox), which
    # rightly drops KERNELOPT_LLM_*, so the orchestrator would otherwise never see an endpoint. Its own
    # sandboxed children still get neither these nor any other credential.
    llm: dict | None = None
    avoid: list[dict] | None = None  # the team's AVOID list (service.strategy_memory), for the planner
    keep_compile_caches: bool = False  # the worker keeps the children's compiler caches for the team's next job


def _run_engine(req: EngineRequest) -> dict:
    """Child: run one job with the engine; cancelled when `cancel_file` appears."""
    _watch_parent(req.parent_pid)
    settings = None
    if req.llm is not None:
        settings = LLMSettings(**req.llm)
    cancel = Path(req.cancel_file)
    result = run_job(req.problem_path, req.workdir, JobOptions.from_dict(req.options),
                     should_cancel=cancel.exists, weights_path=req.weights_path, llm_settings=settings,
                     avoid=req.avoid, keep_compile_caches=req.keep_compile_caches)
    return result.to_dict()


def llm_settings_for(options: dict, env: dict[str, str] | None = None) -> dict | None:
    """The worker's LLM settings, as data for the engine, when the job asks for an agent generator
    (`llm`, `llm_codegen`: search.registry's `llm` flag)."""
    if not uses_llm(options.get("generators") or []):
        return None
    return asdict(LLMSettings.from_env(env))


def read_report(workdir: Path) -> dict:
    """The engine's report.json, read as the worker reads a job's files (a regular file, bounded); {} if none."""
    try:
        with open_work_file(workdir / "report.json") as f:
            report = json.loads(f.read(MAX_REPORT_BYTES))
    except (OSError, ValueError):
        return {}
    return report if isinstance(report, dict) else {}


def _watch_parent(parent_pid: int) -> None:
    """End this child (and what it started) if the worker that started it dies.

    A worker killed with SIGKILL cannot stop its children; the reaper will
    re-queue the job, and this run must not keep burning the GPU meanwhile.
    """

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent_pid:
                kill_tree(os.getpid())

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


# --------------------------------------------------------------------------- the monitor thread

class _Monitor(threading.Thread):
    """Parent side of a running job: heartbeat, events, cancellation."""

    def __init__(self, job_id: str, worker_id: str, settings, events_path: Path, cancel_file: Path):
        super().__init__(name=f"monitor-{job_id[:8]}", daemon=True)
        self.job_id, self.worker_id, self.settings = job_id, worker_id, settings
        self.events_path, self.cancel_file = events_path, cancel_file
        self.tick = max(0.2, min(1.0, settings.heartbeat_interval_s / 2))
        self._halt = threading.Event()
        self._offset = 0  # bytes of events.jsonl recorded so far
        self._progress = 0.0
        self.cancel_touched = False
        self.refused = False  # events.jsonl was not a regular file (warned once)
        self.lost = False  # the job is no longer ours (re-queued by the reaper)
        self.events_recorded = 0
        self.event_bytes = 0  # of message and data recorded (MAX_EVENT_BYTES_PER_JOB)
        self.over_budget = False  # said once, in the log and as the last event recorded

    def stop(self) -> None:
        self._halt.set()

    def run(self) -> None:
        next_beat = time.monotonic() + self.settings.heartbeat_interval_s
        while not self._halt.wait(self.tick):
            try:
                self.tail()
                if time.monotonic() >= next_beat:
                    next_beat = time.monotonic() + self.settings.heartbeat_interval_s
                    self.beat()
                self.check_cancel()
            except Exception:  # noqa: BLE001 - a database hiccup must not kill the monitor
                log.exception("job %s: monitor step failed; retrying", self.job_id)

    def beat(self) -> None:
        with _scope(self.settings) as s:
            ok = jobs.heartbeat(s, self.job_id, self.worker_id)
        if not ok and not self.lost:
            # Re-queued by the reaper (heartbeats were late) or finished elsewhere:
            # stop this run; its final transition will be refused anyway.
            log.warning("job %s is no longer held by %s; stopping this run", self.job_id, self.worker_id)
            self.lost = True
            self.touch_cancel()

    def check_cancel(self) -> None:
        if self.cancel_touched:
            return
        with _scope(self.settings) as s:
            requested = job_queries.is_cancel_requested(s, self.job_id)
        if requested:
            log.info("job %s: cancel requested; stopping at the next stage boundary", self.job_id)
            self.touch_cancel()

    def touch_cancel(self) -> None:
        self.cancel_file.parent.mkdir(parents=True, exist_ok=True)
        self.cancel_file.touch()
        self.cancel_touched = True

    def tail(self) -> None:
        """Copy new complete lines of events.jsonl into the events table.

        The offset advances line by line as each is recorded, so a database error
        part-way retries from the first unrecorded line: none lost, none doubled.
        The file is read as the job left it, which sandboxed code can change: a
        regular file only (`open_work_file`: a link or a FIFO is refused), at most
        MAX_EVENTS_CHUNK bytes per read and MAX_EVENTS_CHUNKS_PER_TAIL reads per call;
        a line longer than a read is skipped; past MAX_EVENTS_PER_JOB events, no more
        are recorded.
        """
        for _ in range(MAX_EVENTS_CHUNKS_PER_TAIL):
            if not self._tail_once():
                break

    def _tail_once(self) -> bool:
        """Record the complete lines of the next chunk; whether a full chunk was read (more may follow)."""
        try:
            with open_work_file(self.events_path) as f:
                f.seek(self._offset)
                chunk = f.read(MAX_EVENTS_CHUNK)
        except FileNotFoundError:
            return False
        except OSError as exc:
            if not self.refused:
                log.warning("job %s: events.jsonl not read (%s): the job's later events are not recorded",
                            self.job_id, exc)
                self.refused = True
            return False
        end = chunk.rfind(b"\n")
        if end < 0:
            if len(chunk) == MAX_EVENTS_CHUNK:  # one line longer than a whole chunk: not an event of the engine
                log.warning("job %s: skipped an event line longer than %d bytes", self.job_id, MAX_EVENTS_CHUNK)
                self._offset += len(chunk)
                return True
            return False  # no complete line yet
        with _scope(self.settings) as s:
            for line in chunk[:end + 1].split(b"\n")[:-1]:
                if line.strip():
                    self._record(s, jobs, line)
                self._offset += len(line) + 1
        return len(chunk) == MAX_EVENTS_CHUNK

    def _record(self, s, jobs, line: bytes) -> None:
        if self.events_recorded >= MAX_EVENTS_PER_JOB or self.event_bytes >= MAX_EVENT_BYTES_PER_JOB:
            if not self.over_budget:
                self.over_budget = True
                why = (f"more than {MAX_EVENTS_PER_JOB} events" if self.events_recorded >= MAX_EVENTS_PER_JOB
                       else f"more than {MAX_EVENT_BYTES_PER_JOB >> 20} MiB of events")
                log.warning("job %s: %s; no more are recorded", self.job_id, why)
                jobs.add_event(s, self.job_id, None, "log", f"the job wrote {why}: no more of its events are "
                               "recorded", {})
            return
        try:
            ev = json.loads(line)
        except ValueError:
            log.warning("job %s: unreadable event line %r", self.job_id, line[:200])
            return
        if not isinstance(ev, dict):
            return
        stage, kind = ev.get("stage"), str(ev.get("kind") or "log")
        stage = stage if isinstance(stage, str) else None
        data = ev.get("data") if isinstance(ev.get("data"), dict) else {}
        if len(json.dumps(data, default=str)) > MAX_EVENT_DATA:
            data = {"dropped": f"the event's data was over {MAX_EVENT_DATA} bytes"}
        message = str(ev.get("message", ""))
        if len(message) > MAX_EVENT_MESSAGE:
            message = clip(message, MAX_EVENT_MESSAGE, note=f" ({len(message)} characters in all; cut)")
        jobs.add_event(s, self.job_id, stage, kind, message, data)
        self.events_recorded += 1
        self.event_bytes += len(message.encode()) + len(json.dumps(data, default=str))
        if kind == "stage_started" and stage:
            self._progress = max(self._progress, STAGE_PROGRESS.get(stage, self._progress))
            jobs.set_stage(s, self.job_id, stage, self._progress)


# --------------------------------------------------------------------------- execute_job

def _safe_filename(name: str | None) -> str:
    base = Path(name or "").name.strip()
    if not base or base in (".", "..") or base.startswith("."):
        return "problem.py"
    return base


def compile_cache_slot(settings, team_id: int) -> Path | None:
    """Where a team's compiler caches wait between its jobs (None: KERNELOPT_COMPILE_CACHE=off)."""
    if not settings.compile_cache:
        return None
    return Path(settings.data_dir).resolve() / "compile-cache" / f"team-{int(team_id)}"


def _job_options(options: dict | None, settings) -> dict:
    """The user's options, with the engine's budget kept inside the hard time limit."""
    opts = JobOptions.from_dict(dict(options or {})).to_dict()  # ValueError with a clear message
    limit = float(settings.job_time_limit_s)
    ceiling = limit - BUDGET_MARGIN_S if limit > 2 * BUDGET_MARGIN_S else limit * 0.9
    if opts["time_budget_s"] > ceiling:
        opts["time_budget_s"] = ceiling
    return opts


def execute_job(job_id: str, settings, worker_id: str, env: dict[str, str] | None = None) -> str | None:
    """Claim and run one job. Returns the final status it set, or None if there was nothing to run.

    `env` is added to the engine child's environment (a dispatcher pins its GPU
    with CUDA_VISIBLE_DEVICES here).
    """
    with _scope(settings) as s:
        job = jobs.claim_job(s, job_id, worker_id)
        if job is None:
            log.info("job %s: not queued (already claimed, finished or cancelled); nothing to do", job_id)
            return None
        claimed = {"filename": job.filename, "input_blob": job.input_blob, "weights_blob": job.weights_blob,
                   "options": dict(job.options or {}), "attempt": int(job.attempts), "team_id": job.team_id}
    log.info("job %s: claimed by %s (attempt %d)", job_id, worker_id, claimed["attempt"])
    try:
        return _execute_claimed(job_id, settings, worker_id, env, claimed)
    except Exception as exc:  # noqa: BLE001 - whatever broke, the job must not stay running
        log.exception("job %s: worker error", job_id)
        with _scope(settings) as s:
            jobs.fail_job(s, job_id, worker_id, f"internal worker error: {type(exc).__name__}: {exc}")
        return "failed"
    # A BaseException (worker shutdown) propagates: the job stays running without
    # heartbeats and the reaper re-queues it.


def _record_agents(job_id: str, team_id: int, settings, workdir: Path) -> None:
    """The job's LLM usage and strategy outcomes into the database (the team's AVOID list is built from them)."""
    report = read_report(workdir)
    if not (report.get("llm") or report.get("agents")):
        return
    try:
        with _scope(settings) as s:
            strategy_memory.record_job(s, team_id, job_id, report)
    except Exception:  # noqa: BLE001 - the job is finished; its memory is a bonus, never its failure
        log.exception("job %s: could not record the agents' outcomes", job_id)


def _execute_claimed(job_id: str, settings, worker_id: str, env: dict[str, str] | None, claimed: dict) -> str | None:
    job_dir = Path(settings.jobs_dir).resolve() / job_id
    attempt_dir = job_dir / f"attempt-{claimed['attempt']}"
    if attempt_dir.exists():
        shutil.rmtree(attempt_dir, ignore_errors=True)
    input_dir, workdir, cancel_file = attempt_dir / "input", attempt_dir / "work", attempt_dir / "CANCEL"
    input_dir.mkdir(parents=True)
    workdir.mkdir(parents=True)
    blobs = blob_store(settings)
    problem_path = input_dir / _safe_filename(claimed["filename"])
    blobs.copy_to(claimed["input_blob"], problem_path)
    if claimed["weights_blob"]:
        blobs.copy_to(claimed["weights_blob"], input_dir / "weights.safetensors")

    try:
        options = _job_options(claimed["options"], settings)
    except (ValueError, TypeError) as exc:
        with _scope(settings) as s:
            jobs.fail_job(s, job_id, worker_id, f"invalid options: {exc}")
        return "failed"
    try:
        llm = llm_settings_for(options)
    except ValueError as exc:  # the worker's KERNELOPT_LLM_* are malformed: the operator's error, said as such
        with _scope(settings) as s:
            jobs.fail_job(s, job_id, worker_id, f"the worker's LLM settings are invalid: {exc}")
        return "failed"
    avoid = None
    if llm is not None:  # only the planner reads it
        with _scope(settings) as s:
            avoid = strategy_memory.avoid_list(s, claimed["team_id"])

    # the job's processes' output reaches the worker's log prefixed with the job's id (isolation/child_output.py)
    child_env = {**(env or {}), LABEL_ENV: f"job {job_id}",
                 # the stage children's kernel cache among the job's other caches (which the worker keeps)
                 "KERNELOPT_KERNEL_CACHE": str(workdir / compile_cache.CACHE_DIR / "kernels")}
    monitor = _Monitor(job_id, worker_id, settings, workdir / "events.jsonl", cancel_file)
    monitor.start()
    limit = float(settings.job_time_limit_s)
    t0 = time.monotonic()
    result: dict | None = None
    engine_error: str | None = None
    # The job's own uid (where the worker runs as root): its orchestrator runs as that uid with no
    # credentials in its environment, and its stage children in the sandbox under it.
    lease = lease_uid(SandboxPolicy.from_env())
    blocked = blocking_ancestor(attempt_dir) if lease else None
    if blocked is not None and lease is not None:  # (blocked is only ever found with a lease)
        lease.release()
        monitor.stop()
        message = (f"the job's sandbox uid cannot reach its work directory: {blocked} is not traversable by "
                   "other users (chmod o+x it, or move KERNELOPT_DATA_DIR; docs/operations.md, Threat model)")
        log.error("job %s: %s", job_id, message)
        with _scope(settings) as s:
            jobs.fail_job(s, job_id, worker_id, f"internal worker error: {message}")
        return "failed"
    # The team's compiler caches from its earlier jobs (isolation.compile_cache), lent to this one and taken back
    # after it with its children's additions, for the team's next job to compile from.
    cache_slot = compile_cache_slot(settings, claimed["team_id"])
    try:
        weights = input_dir / "weights.safetensors"
        if cache_slot is not None:
            try:
                compile_cache.lend(cache_slot, workdir)
            except OSError:  # the caches are a bonus, never the job's failure: it compiles without them
                log.exception("job %s: could not lend the team's compiler caches", job_id)
        give_to(attempt_dir, lease.uid if lease else None)
        result = run_in_child(_run_engine, EngineRequest(str(problem_path), str(workdir), options, str(cancel_file),
                                                         os.getpid(), str(weights) if weights.exists() else None,
                                                         llm=llm, avoid=avoid,
                                                         keep_compile_caches=cache_slot is not None),
                              timeout_s=limit, env=child_env, trusted=True, scratch=attempt_dir,
                              uid=lease.uid if lease else None)
    except ChildError as exc:
        if exc.kind == ChildErrorKind.TIMEOUT:
            result = JobResult(Outcome.FALLBACK, f"{Cause.TIMEOUT}: the job did not finish within its time limit of {limit:.0f} s "
                               "(KERNELOPT_JOB_TIME_LIMIT_S); the compiler's code is kept", speedup=1.0).to_dict()
        elif exc.kind in (ChildErrorKind.CRASH, ChildErrorKind.PROTOCOL):
            result = JobResult(Outcome.FALLBACK, f"{Cause.CRASH}: the job's process died ({exc.message}); "
                               "the compiler's code is kept", speedup=1.0).to_dict()
        else:
            engine_error = f"internal engine error: {exc.message}"
            log.error("job %s: engine raised %s\n%s", job_id, exc.message, exc.traceback)
    except BaseException:
        monitor.stop()  # a worker shutdown: no more heartbeats, the reaper re-queues the job
        raise
    finally:
        if lease is not None:
            lease.release()
        wall = time.monotonic() - t0
        if cache_slot is not None:  # also after a timeout or a crash: what the compile got through is kept
            try:
                compile_cache.take_back(workdir, cache_slot, settings.compile_cache_max_bytes)
            except OSError:  # the caches are a bonus, never the job's failure
                log.exception("job %s: could not keep the compiler caches", job_id)

    def cancelled() -> bool:
        return monitor.cancel_touched and not monitor.lost and (
            result is None or (result["outcome"] == "failed" and result.get("cause") == "cancelled")
            or cause_code(result["cause"] or "") in (Cause.TIMEOUT, Cause.CRASH))

    # The artifacts are copied while the monitor keeps beating: a large copy must not
    # look like a lost worker to the reaper. It stops just before the final transition.
    collected = None
    try:
        if result is not None and engine_error is None and not cancelled():
            collected = collect_for_job(workdir, blobs, settings, should_stop=lambda: monitor.lost, job_id=job_id)
            result["artifacts"] = sorted(collected.stored)
            result["skipped_artifacts"] = collected.skipped
            result["artifacts_stored"] = collected.summary()
    finally:
        monitor.stop()
        monitor.join(30)
        try:
            monitor.tail()  # the last lines the engine wrote
        except Exception:  # noqa: BLE001
            log.exception("job %s: could not record the last events", job_id)
    stored = collected.stored if collected is not None else {}
    notes = collected.notes() if collected is not None else []

    # The state machine charges each attempt's wall time as GPU time, in the final transition itself.
    on_gpu = ran_on_gpu(workdir, child_env)
    if result is not None and result.get("timing") != TIMING_NOT_MEASURED and not on_gpu:
        result = not_measured(result, NO_GPU_TIMING)  # e.g. a timeout's result: no speed without a GPU
    with _scope(settings) as s:
        if cancelled():
            ok, status = jobs.mark_cancelled(s, job_id, worker_id, on_gpu=on_gpu), "cancelled"
        elif engine_error is not None:
            ok, status = jobs.fail_job(s, job_id, worker_id, engine_error, on_gpu=on_gpu), "failed"
        else:
            assert result is not None  # no engine error: the engine's result, or one made for its timeout or crash
            if result["outcome"] == "failed":
                ok, status = jobs.fail_job(s, job_id, worker_id, result.get("error") or result["cause"],
                                           stored, blobs, notes, on_gpu=on_gpu), "failed"
            else:
                ok, status = jobs.finish_job(s, job_id, worker_id, result, stored, blobs, notes,
                                             on_gpu=on_gpu), "succeeded"
    if not ok:
        log.warning("job %s: final transition to %s refused (no longer held by %s)", job_id, status, worker_id)
        return None
    _record_agents(job_id, claimed["team_id"], settings, workdir)
    log.info("job %s: %s%s in %.1f s", job_id, status,
             f" ({result['outcome']}: {one_line(result['cause'])})" if result else "", wall)
    shutil.rmtree(job_dir, ignore_errors=True)  # artifacts live in the blob store now
    return status
