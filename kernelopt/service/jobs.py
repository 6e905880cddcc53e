"""The job state machine — the only code that changes a job's status.

    queued ──claim──▶ running ──finish──▶ succeeded   (the engine completed, any outcome)
       │                 │ ├────fail───▶ failed      (the submission cannot run)
       │                 │ ├──cancel───▶ cancelled   (worker saw cancel_requested)
       │                 │ └──reaper───▶ crashed     (heartbeat lost, attempts used up)
       │                 └──reaper───▶ queued      (heartbeat lost, attempts left)
       └──cancel──▶ cancelled

Every transition is one conditional UPDATE (WHERE id = ? AND status = ? [AND
worker_id = ?]) whose rowcount says whether it happened, so two workers, a
redelivered message, the reaper and a user's cancel can race freely: exactly one
wins and the others see False/None. Mutating functions commit their own
transaction (a transition is the unit of work). Reads, which never commit, live
in service.job_queries.
"""
from __future__ import annotations

import hashlib
import json
import math
import mimetypes
import threading
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, and_, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kernelopt.core.text import clip, one_line
from kernelopt.service.job_queries import get_job, load_job
from kernelopt.service.notify import mark_changed
from kernelopt.storage.blobs import BlobStore
from kernelopt.storage.models import (
    CANCELLED,
    CRASHED,
    FAILED,
    QUEUED,
    RUNNING,
    SUCCEEDED,
    Artifact,
    Job,
    JobEvent,
    Team,
    utcnow,
)

_NO_SYNC = {"synchronize_session": False}  # we re-read rows explicitly after a transition


class IdempotencyConflict(Exception):
    """The Idempotency-Key was already used for a request with a different body."""

    def __init__(self, job_id: str):
        super().__init__(f"Idempotency-Key already used for job {job_id} with a different request body")
        self.job_id = job_id


class QueueFull(Exception):
    """The team has too many queued jobs; retry after about retry_after_s seconds."""

    def __init__(self, queued: int, limit: int, retry_after_s: int):
        super().__init__(f"{queued} jobs already queued for this team (limit {limit}); retry in about {retry_after_s} s")
        self.queued, self.limit, self.retry_after_s = queued, limit, retry_after_s


# ---------------------------------------------------------------- submission

def request_hash(data: bytes, options: dict | None, weights: bytes | None, tag: str | None = None) -> str:
    """What makes two submissions "the same request" for idempotency: every field of the POST."""
    h = hashlib.sha256()
    h.update(hashlib.sha256(data).hexdigest().encode())
    h.update(b"\n" + json.dumps(options or {}, sort_keys=True, separators=(",", ":")).encode())
    h.update(b"\n" + (hashlib.sha256(weights).hexdigest() if weights is not None else "-").encode())
    h.update(b"\n" + json.dumps(tag).encode())
    return h.hexdigest()


# SQLite has no row locks (FOR UPDATE is ignored); the embedded server is one
# process, so a lock there serialises count-then-insert across its threads (all
# teams at once: SQLite serialises writers anyway).
_sqlite_submit_lock = threading.Lock()


@contextmanager
def _team_submission_lock(session: Session, team_id: int):
    """Serialise a team's submissions, so that count-then-insert cannot overshoot its queue limit.

    PostgreSQL: a row lock on the team, held until the transaction ends."""
    if session.get_bind().dialect.name == "sqlite":
        with _sqlite_submit_lock:
            yield
    else:
        session.execute(select(Team.id).where(Team.id == team_id).with_for_update())
        yield


def create_job(session: Session, team_id: int, filename: str, data: bytes, options: dict | None,
               weights: bytes | None, idempotency_key: str | None, tag: str | None, blobs: BlobStore,
               settings) -> tuple[Job, bool]:
    """Queue a job. Returns (job, created); a replayed Idempotency-Key returns (existing job, False)."""
    options = options or {}
    rhash = request_hash(data, options, weights, tag)
    if idempotency_key is not None:
        existing = _by_idempotency_key(session, team_id, idempotency_key)
        if existing is not None:
            return _replay(existing, rhash), False

    with _team_submission_lock(session, team_id):
        queued = _count(session, team_id, QUEUED)
        limit = settings.max_queued_jobs_per_team
        if queued >= limit:
            retry = _retry_after_estimate(session, team_id, excess=queued - limit + 1)
            session.rollback()
            raise QueueFull(queued, limit, retry)

        # Blobs only after the limit check: a refused submission stores nothing.
        job = Job(team_id=team_id, status=QUEUED, filename=filename, options=options,
                  problem_sha256=hashlib.sha256(data).hexdigest(), input_blob=blobs.put_bytes(data),
                  weights_blob=blobs.put_bytes(weights) if weights is not None else None,
                  tag=tag, idempotency_key=idempotency_key, request_hash=rhash, created_at=utcnow())
        session.add(job)
        try:
            session.flush()
            _event(session, job.id, None, "status", "queued", {"status": QUEUED})
            session.commit()
        except IntegrityError:
            # Two retries with the same key raced; the other insert won. Answer as a replay.
            session.rollback()
            existing = _by_idempotency_key(session, team_id, idempotency_key) if idempotency_key else None
            if existing is None:
                raise
            return _replay(existing, rhash), False
    return job, True


def _by_idempotency_key(session: Session, team_id: int, key: str) -> Job | None:
    return session.scalar(select(Job).where(Job.team_id == team_id, Job.idempotency_key == key)
                          .execution_options(populate_existing=True))


def _replay(existing: Job, rhash: str) -> Job:
    if existing.request_hash != rhash:
        raise IdempotencyConflict(existing.id)
    return existing


def _count(session: Session, team_id: int, status: str) -> int:
    count = session.scalar(select(func.count()).select_from(Job).where(Job.team_id == team_id, Job.status == status))
    return cast(int, count)  # COUNT(*) always returns a row


def _retry_after_estimate(session: Session, team_id: int, excess: int) -> int:
    """Seconds until `excess` queued jobs of the team have likely started.

    Uses the team's recent run times and how many of its jobs run in parallel;
    a guess for the Retry-After header, clamped to [1 s, 1 h].
    """
    rows = session.execute(
        select(Job.started_at, Job.finished_at)
        .where(Job.team_id == team_id, Job.finished_at.is_not(None), Job.started_at.is_not(None))
        .order_by(Job.finished_at.desc()).limit(20)).all()
    durations = [(f - s).total_seconds() for s, f in rows if s is not None and f is not None and f >= s]
    mean_run = sum(durations) / len(durations) if durations else 60.0
    parallel = max(1, _count(session, team_id, RUNNING))
    return int(min(3600, max(1, math.ceil(mean_run * excess / parallel))))


# ---------------------------------------------------------------- worker transitions

def _transition(session: Session, *where, **values) -> bool:
    # An UPDATE's result is a CursorResult (Session.execute is typed as returning the base Result).
    result = cast(CursorResult[Any], session.execute(update(Job).where(*where).values(**values),
                                                     execution_options=_NO_SYNC))
    return result.rowcount == 1


def claim_job(session: Session, job_id: str, worker_id: str) -> Job | None:
    """queued → running for this worker; None if the job is not queued (already claimed, cancelled, gone)."""
    now = utcnow()
    if not _transition(session, Job.id == job_id, Job.status == QUEUED,
                       status=RUNNING, worker_id=worker_id, attempts=Job.attempts + 1, heartbeat_at=now,
                       started_at=now, stage=None, progress=0.0):
        session.commit()
        return None
    job = load_job(session, job_id)
    assert job is not None  # the UPDATE above just matched it, in this transaction
    _event(session, job_id, None, "status", f"running on {worker_id} (attempt {job.attempts})",
           {"status": RUNNING, "worker_id": worker_id, "attempt": job.attempts})
    session.commit()
    return job


def _owned(job_id: str, worker_id: str):
    return (Job.id == job_id, Job.status == RUNNING, Job.worker_id == worker_id)


def heartbeat(session: Session, job_id: str, worker_id: str) -> bool:
    """Refresh the heartbeat; False means this worker no longer owns the job (re-queued, finished)."""
    ok = _transition(session, *_owned(job_id, worker_id), heartbeat_at=utcnow())
    session.commit()
    return ok


def set_stage(session: Session, job_id: str, stage: str, progress: float | None = None) -> bool:
    values: dict[str, Any] = {"stage": stage[:64]}
    if progress is not None:
        values["progress"] = min(1.0, max(0.0, float(progress)))
    ok = _transition(session, Job.id == job_id, Job.status == RUNNING, **values)
    session.commit()
    return ok


def add_event(session: Session, job_id: str, stage: str | None, kind: str, message: str,
              data: dict | None = None) -> int:
    """Append an event; its id is the SSE id. One writer per job (its worker), so ids
    of a job's events become visible in increasing order and Last-Event-ID resumes exactly."""
    event_id = _event(session, job_id, stage, kind, message, data)
    session.commit()
    return event_id


def _event(session: Session, job_id: str, stage: str | None, kind: str, message: str, data: dict | None) -> int:
    ev = JobEvent(job_id=job_id, stage=stage[:64] if stage else None, kind=kind[:32], message=message or "",
                  data=_json_safe(data), at=utcnow())
    session.add(ev)
    session.flush()
    mark_changed(session, job_id)  # the API's event streams hear of it when this commits (service.notify)
    return ev.id


def _attempt_seconds(job: Job, now: datetime) -> float:
    return max(0.0, (now - job.started_at).total_seconds()) if job.started_at else 0.0


# A job's artifacts: (name, path) pairs stored here, or {name: sha256} already in the blob store
# (worker/artifacts.py stores them itself, with its caps, while the job's heartbeat goes on).
Artifacts = Sequence[tuple[str, Any]] | Mapping[str, str]
# Events recorded in the transaction of a final transition, before its status event: (stage, kind, message, data).
Notes = Sequence[tuple[str | None, str, str, dict]]


def _store(artifacts: Artifacts, blobs: BlobStore | None) -> dict[str, str]:
    if blobs is None:
        return {}
    if isinstance(artifacts, Mapping):
        return dict(artifacts)
    return {name: blobs.put_file(path) for name, path in artifacts}


def finish_job(session: Session, job_id: str, worker_id: str, result: dict,
               artifacts: Artifacts, blobs: BlobStore, notes: Notes = (), *, on_gpu: bool = True) -> bool:
    """running → succeeded with the engine's result and artifacts. False if this worker lost the job."""
    job = load_job(session, job_id)
    if job is None or job.status != RUNNING or job.worker_id != worker_id:
        session.commit()
        return False
    # Blob writes (slow, idempotent) happen before the short transaction.
    stored = _store(artifacts, blobs)
    now, result = utcnow(), _json_safe(result)
    speedup = result.get("speedup")
    if not _transition(session, *_owned(job_id, worker_id), status=SUCCEEDED, outcome=result.get("outcome"),
                       speedup=speedup if isinstance(speedup, (int, float)) else None,
                       cause=result.get("cause"), error=result.get("error"), result=result, finished_at=now,
                       heartbeat_at=now, progress=1.0,
                       gpu_seconds=Job.gpu_seconds + (_attempt_seconds(job, now) if on_gpu else 0.0)):
        session.commit()
        return False
    _add_artifacts(session, job_id, stored, blobs)
    _add_notes(session, job_id, notes)
    _event(session, job_id, None, "status", f"succeeded: {result.get('outcome')}",
           {"status": SUCCEEDED, "outcome": result.get("outcome")})
    session.commit()
    return True


def _add_artifacts(session: Session, job_id: str, stored: dict[str, str], blobs: BlobStore | None) -> None:
    for name, sha in stored.items():
        assert blobs is not None  # only a blob store stores artifacts (_store)
        session.add(Artifact(job_id=job_id, name=name, blob_sha256=sha, size=blobs.size(sha),
                             content_type=mimetypes.guess_type(name)[0] or "application/octet-stream"))


def _add_notes(session: Session, job_id: str, notes: Notes) -> None:
    for stage, kind, message, data in notes:
        _event(session, job_id, stage, kind, message, data)


def _end_running(session: Session, job_id: str, worker_id: str, status: str, message: str,
                 stored: dict[str, str] | None = None, blobs: BlobStore | None = None, notes: Notes = (),
                 on_gpu: bool = True, **values) -> bool:
    job = load_job(session, job_id)
    if job is None:
        session.commit()
        return False
    now = utcnow()
    ok = _transition(session, *_owned(job_id, worker_id), status=status, finished_at=now,
                     gpu_seconds=Job.gpu_seconds + (_attempt_seconds(job, now) if on_gpu else 0.0), **values)
    if ok:
        _add_artifacts(session, job_id, stored or {}, blobs)
        _add_notes(session, job_id, notes)
        _event(session, job_id, None, "status", message, {"status": status})
    session.commit()
    return ok


FAILED_CAUSE_CHARS = 500


def fail_job(session: Session, job_id: str, worker_id: str, error: str,
             artifacts: Artifacts = (), blobs: BlobStore | None = None, notes: Notes = (), *,
             on_gpu: bool = True) -> bool:
    """running → failed: the submission cannot run (engine outcome "failed").

    `artifacts` (the engine's report and events, where it got that far) are kept
    with the job, so the user can read why."""
    stored = _store(artifacts, blobs)
    # the cause every ended job states, code first as a fallback's is ("failed: " and the error's first line);
    # the message whole stays in `error`
    cause = clip("failed: " + one_line(error.split("\n", 1)[0]), FAILED_CAUSE_CHARS)
    return _end_running(session, job_id, worker_id, FAILED, f"failed: {error}", stored, blobs, notes,
                        on_gpu, outcome="failed", error=error, cause=cause)


def mark_cancelled(session: Session, job_id: str, worker_id: str, *, on_gpu: bool = True) -> bool:
    return _end_running(session, job_id, worker_id, CANCELLED, "cancelled", on_gpu=on_gpu)


def request_cancel(session: Session, team_id: int, job_id: str) -> Job | None:
    """Cancel: a queued job ends at once; a running one is flagged for its worker. None if not the team's."""
    if get_job(session, team_id, job_id) is None:
        return None
    now = utcnow()
    if _transition(session, Job.id == job_id, Job.status == QUEUED,
                   status=CANCELLED, cancel_requested=True, finished_at=now):
        _event(session, job_id, None, "status", "cancelled before it started", {"status": CANCELLED})
    elif _transition(session, Job.id == job_id, Job.status == RUNNING, Job.cancel_requested.is_(False),
                     cancel_requested=True):
        _event(session, job_id, None, "status", "cancel requested", {"status": RUNNING, "cancel_requested": True})
    session.commit()
    return get_job(session, team_id, job_id)


def requeue_stale(session: Session, heartbeat_timeout_s: float, max_attempts: int) -> tuple[list[str], list[str]]:
    """The reaper: running jobs whose heartbeat is older than the timeout lost their worker.

    With attempts left they go back to queued (the caller re-enqueues the returned
    ids); otherwise they end crashed. A job whose cancel was requested ends cancelled.
    Each update re-checks staleness, so a heartbeat arriving meanwhile wins.
    """
    now = utcnow()
    cutoff = now - timedelta(seconds=heartbeat_timeout_s)
    is_stale = or_(Job.heartbeat_at < cutoff, and_(Job.heartbeat_at.is_(None), Job.started_at < cutoff))
    stale = session.execute(select(Job.id, Job.attempts, Job.worker_id, Job.cancel_requested, Job.started_at,
                                   Job.heartbeat_at).where(Job.status == RUNNING, is_stale)).all()
    session.commit()
    requeued: list[str] = []
    crashed: list[str] = []
    for row in stale:
        where = (Job.id == row.id, Job.status == RUNNING, Job.worker_id == row.worker_id,
                 Job.attempts == row.attempts, is_stale)
        # The lost attempt ran until its last heartbeat; charge that much GPU time.
        lost = max(0.0, ((row.heartbeat_at or row.started_at) - row.started_at).total_seconds()) \
            if row.started_at else 0.0
        if row.cancel_requested:
            if _transition(session, *where, status=CANCELLED, finished_at=now, gpu_seconds=Job.gpu_seconds + lost):
                _event(session, row.id, None, "status", "cancelled (its worker was lost)", {"status": CANCELLED})
        elif row.attempts < max_attempts:
            if _transition(session, *where, status=QUEUED, worker_id=None, heartbeat_at=None, stage=None,
                           progress=0.0, gpu_seconds=Job.gpu_seconds + lost):
                _event(session, row.id, None, "status",
                       f"worker {row.worker_id} lost (no heartbeat for {heartbeat_timeout_s:g} s); "
                       f"re-queued after attempt {row.attempts} of {max_attempts}",
                       {"status": QUEUED, "attempt": row.attempts})
                requeued.append(row.id)
        else:
            error = (f"worker lost: no heartbeat for {heartbeat_timeout_s:g} s on attempt {row.attempts} "
                     f"of {max_attempts}; giving up")
            if _transition(session, *where, status=CRASHED, error=error, finished_at=now,
                           gpu_seconds=Job.gpu_seconds + lost):
                _event(session, row.id, None, "status", error, {"status": CRASHED})
                crashed.append(row.id)
        session.commit()
    return requeued, crashed


def _json_safe(value: Any) -> Any:
    """JSON columns reject NaN/inf on PostgreSQL; the engine may report them (e.g. a failed timing)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value
