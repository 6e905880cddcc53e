"""Reads of jobs, their events and artifacts, and a team's statistics.

Nothing here changes a job: transitions live in service.jobs (the state
machine). Team-scoped reads make another team's job indistinguishable from a
missing one; the unscoped ones (load_job, queued_job_ids, is_cancel_requested)
are for workers and the reaper, never for API requests.
"""
from __future__ import annotations

import base64
import binascii
import json
import math
from datetime import datetime

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from kernelopt.core.outcome import OUTCOMES
from kernelopt.pipeline.options import TIMING_NOT_MEASURED
from kernelopt.storage.models import CANCELLED, CRASHED, FAILED, QUEUED, STATUSES, SUCCEEDED, Artifact, Job, JobEvent


class InvalidCursor(ValueError):
    pass


def get_job(session: Session, team_id: int, job_id: str) -> Job | None:
    """The team's job, or None — another team's job is indistinguishable from a missing one."""
    return session.scalar(select(Job).where(Job.id == job_id, Job.team_id == team_id)
                          .execution_options(populate_existing=True))


def load_job(session: Session, job_id: str) -> Job | None:
    """Unscoped read, for workers and the reaper (never for API requests)."""
    return session.get(Job, job_id, populate_existing=True)


def encode_cursor(job: Job) -> str:
    raw = json.dumps({"t": job.created_at.isoformat(), "id": job.id}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        d = json.loads(raw)
        at, job_id = datetime.fromisoformat(d["t"]), d["id"]
        if at.tzinfo is None or not isinstance(job_id, str):
            raise ValueError
        return at, job_id
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise InvalidCursor("invalid cursor") from None


def _created_and_tag(q, after, before, tag):
    """The filters jobs are listed and counted by: created in [after, before), with a tag."""
    if after is not None:
        q = q.where(Job.created_at >= after)
    if before is not None:
        q = q.where(Job.created_at < before)
    if tag is not None:
        q = q.where(Job.tag == tag)
    return q


def list_jobs(session: Session, team_id: int, status: str | None = None, outcome: str | None = None,
              created_after: datetime | None = None, created_before: datetime | None = None,
              tag: str | None = None, cursor: str | None = None, limit: int = 50) -> tuple[list[Job], str | None]:
    """The team's jobs, newest first; returns (page, cursor of the next page or None).

    Keyset pagination over (created_at, id): pages stay stable while new jobs
    arrive, and each page is one index range scan however deep it is.
    """
    limit = max(1, min(int(limit), 500))
    q = select(Job).where(Job.team_id == team_id)
    if status is not None:
        q = q.where(Job.status == status)
    if outcome is not None:
        q = q.where(Job.outcome == outcome)
    q = _created_and_tag(q, created_after, created_before, tag)
    if cursor:
        at, last_id = decode_cursor(cursor)
        q = q.where(or_(Job.created_at < at, and_(Job.created_at == at, Job.id < last_id)))
    q = q.order_by(Job.created_at.desc(), Job.id.desc()).limit(limit + 1)
    rows = list(session.scalars(q.execution_options(populate_existing=True)))
    page = rows[:limit]
    return page, (encode_cursor(page[-1]) if len(rows) > limit else None)


def list_artifacts(session: Session, team_id: int, job_id: str) -> list[Artifact] | None:
    if get_job(session, team_id, job_id) is None:
        return None
    return list(session.scalars(select(Artifact).where(Artifact.job_id == job_id).order_by(Artifact.name)))


def get_artifact(session: Session, team_id: int, job_id: str, name: str) -> Artifact | None:
    return session.scalar(select(Artifact).join(Job, Job.id == Artifact.job_id)
                          .where(Job.team_id == team_id, Artifact.job_id == job_id, Artifact.name == name))


def queued_job_ids(session: Session, limit: int = 10) -> list[str]:
    """Oldest queued jobs first (for the embedded dispatcher's slots; claim_job decides who runs them)."""
    return list(session.scalars(select(Job.id).where(Job.status == QUEUED)
                                .order_by(Job.created_at, Job.id).limit(limit)))


def is_cancel_requested(session: Session, job_id: str) -> bool:
    return bool(session.scalar(select(Job.cancel_requested).where(Job.id == job_id)))


def events_after(session: Session, job_id: str, after_id: int, limit: int = 500) -> list[JobEvent]:
    return list(session.scalars(select(JobEvent).where(JobEvent.job_id == job_id, JobEvent.id > after_id)
                                .order_by(JobEvent.id).limit(limit)))


# ---------------------------------------------------------------- stats

def deployed_speedup(status: str | None, outcome: str | None, speedup: float | None,
                     timing: str | None) -> float | None:
    """The measured speedup a finished job deploys, or None when its speed was not measured.

    The one rule behind /v1/stats and the dashboard. A speed counts only when a
    succeeded job recorded one: an optimized job's Gate 4 speedup, 1.0 for a
    matched or fallback job (the compiler's code runs). None — "not measured",
    never 1.0 — for a failed or crashed job, a result saying `timing:
    not-measured` (no GPU), or a job that recorded no speedup at all.
    """
    if status != SUCCEEDED or outcome not in ("optimized", "matched", "fallback"):
        return None
    if timing == TIMING_NOT_MEASURED or speedup is None or not math.isfinite(speedup) or speedup <= 0:
        return None
    return float(speedup) if outcome == "optimized" else 1.0


class StatsTally:
    """Counts and geomeans of a set of jobs, fed one row at a time (team_stats, the dashboard's groups)."""

    def __init__(self) -> None:
        self.by_status = dict.fromkeys(STATUSES, 0)
        self.outcomes = dict.fromkeys(OUTCOMES + (CRASHED, CANCELLED), 0)
        self.deployed_logs: list[float] = []
        self.optimized_logs: list[float] = []
        self.finished = self.not_measured = 0
        self.gpu_seconds = 0.0
        self.llm = {"llm_calls": 0, "llm_prompt_tokens": 0, "llm_completion_tokens": 0}
        self.llm_cost: float | None = None

    def add_llm(self, calls: int | None, prompt_tokens: int | None, completion_tokens: int | None,
                cost: float | None) -> None:
        """LLM usage counts for every job, whatever its end: the tokens were spent."""
        self.llm["llm_calls"] += calls or 0
        self.llm["llm_prompt_tokens"] += prompt_tokens or 0
        self.llm["llm_completion_tokens"] += completion_tokens or 0
        if cost is not None:
            self.llm_cost = (self.llm_cost or 0.0) + cost

    def add(self, status: str, outcome: str | None, speedup: float | None, gpu: float | None,
            timing: str | None) -> float | None:
        """Count one job; returns its deployed measured speedup (None: not measured)."""
        self.by_status[status] = self.by_status.get(status, 0) + 1
        self.gpu_seconds += gpu or 0.0
        if status in (CRASHED, CANCELLED):
            self.outcomes[status] += 1
        elif status in (SUCCEEDED, FAILED):
            key = outcome or "failed"
            self.outcomes[key] = self.outcomes.get(key, 0) + 1
        if status not in (SUCCEEDED, FAILED, CRASHED):
            return None  # unfinished or withdrawn: neither measured nor "not measured"
        self.finished += 1
        deployed = deployed_speedup(status, outcome, speedup, timing)
        if deployed is None:
            self.not_measured += 1
            return None
        self.deployed_logs.append(math.log(deployed))
        if outcome == "optimized":
            self.optimized_logs.append(math.log(deployed))
        return deployed

    def as_dict(self) -> dict:
        return {
            "total": sum(self.by_status.values()),
            "by_status": self.by_status,
            "outcomes": self.outcomes,
            "finished": self.finished,
            "measured": len(self.deployed_logs),
            "not_measured": self.not_measured,
            "geomean_speedup": _geomean(self.deployed_logs),
            "geomean_speedup_optimized": _geomean(self.optimized_logs),
            "gpu_seconds": self.gpu_seconds,
            "gpu_hours": self.gpu_seconds / 3600.0,
            **self.llm,
            "llm_total_tokens": self.llm["llm_prompt_tokens"] + self.llm["llm_completion_tokens"],
            "llm_cost": self.llm_cost,
        }


def team_stats(session: Session, team_id: int, since: datetime | None = None, until: datetime | None = None,
               tag: str | None = None) -> dict:
    """Outcome counts, speedup geomeans and GPU time of the team's jobs created in [since, until).

    The geomeans are over measured jobs only (deployed_speedup: the speedup
    actually deployed, 1.0 for a matched or fallback job that measured its
    speed); geomean_speedup_optimized is over the optimized ones among them. A
    job without a measured speed (failed, crashed, run without a GPU, or no
    speedup recorded) is counted in `not_measured` and in no geomean.
    Cancelled jobs were withdrawn and count in neither.
    """
    timing = Job.result["timing"].as_string()
    q = select(Job.status, Job.outcome, Job.speedup, Job.gpu_seconds, timing, Job.llm_calls, Job.llm_prompt_tokens,
               Job.llm_completion_tokens, Job.llm_cost).where(Job.team_id == team_id)
    tally = StatsTally()
    for status, outcome, speedup, gpu, job_timing, calls, prompt_t, completion_t, cost in session.execute(
            _created_and_tag(q, since, until, tag)):
        tally.add(status, outcome, speedup, gpu, job_timing)
        tally.add_llm(calls, prompt_t, completion_t, cost)
    return tally.as_dict()


def _geomean(logs: list[float]) -> float | None:
    return math.exp(sum(logs) / len(logs)) if logs else None
