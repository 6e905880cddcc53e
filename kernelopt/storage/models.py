"""SQLAlchemy 2 models. One set of models for PostgreSQL (psycopg 3) and SQLite.

Only portable column types are used (no JSONB, no native enums, no server-side
functions) so the embedded SQLite default and PostgreSQL share every query.
Defaults are Python-side for the same reason: the application, not the server,
decides timestamps and ids, so ordering and cursors behave identically on both.
"""
from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def new_job_id() -> str:
    return uuid.uuid4().hex


class UTCDateTime(TypeDecorator):
    """Timezone-aware UTC datetimes on both backends.

    PostgreSQL stores timestamptz. SQLite has no timezone support and would hand
    back naive datetimes, so values are normalised to UTC before storing (the
    stored text then sorts and compares correctly) and re-tagged as UTC on load.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column; use datetime.now(timezone.utc)")
        value = value.astimezone(timezone.utc)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


class Base(DeclarativeBase):
    # Deterministic constraint names: migrations can later drop/alter them by name on both backends.
    metadata = MetaData(naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    })


class Team(Base):
    __tablename__ = "teams"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    prefix: Mapped[str] = mapped_column(String(16), index=True)  # first 8 chars: shown in lists, narrows the lookup
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)  # sha256 hex of the full key; the key is never stored
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


# Job statuses. The transitions between them live in service/jobs.py only.
QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED, CRASHED = "queued", "running", "succeeded", "failed", "cancelled", "crashed"
STATUSES = (QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED, CRASHED)
TERMINAL_STATUSES = (SUCCEEDED, FAILED, CANCELLED, CRASHED)


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (
        # A retried POST with the same Idempotency-Key finds its job; NULL keys never collide.
        UniqueConstraint("team_id", "idempotency_key", name="uq_jobs_team_id_idempotency_key"),
        # Listing is per team, newest first, paginated over (created_at, id).
        Index("ix_jobs_team_created", "team_id", "created_at", "id"),
        # Workers pick queued jobs and the reaper scans running ones.
        Index("ix_jobs_status_created", "status", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_job_id)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(16), default=QUEUED)
    stage: Mapped[str | None] = mapped_column(String(64))
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    outcome: Mapped[str | None] = mapped_column(String(16))
    speedup: Mapped[float | None] = mapped_column(Float)
    cause: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    options: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    filename: Mapped[str] = mapped_column(String(255))
    problem_sha256: Mapped[str] = mapped_column(String(64))
    input_blob: Mapped[str] = mapped_column(String(64))
    weights_blob: Mapped[str | None] = mapped_column(String(64))
    tag: Mapped[str | None] = mapped_column(String(200), index=True)
    idempotency_key: Mapped[str | None] = mapped_column(String(255))
    request_hash: Mapped[str] = mapped_column(String(64))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    worker_id: Mapped[str | None] = mapped_column(String(255))
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())  # start of the current (or last) attempt
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # the engine's JobResult.to_dict()
    gpu_seconds: Mapped[float] = mapped_column(Float, default=0.0)  # summed over attempts, lost ones included
    # The LLM agents' usage of the job's last finished attempt (report.json's `llm`), summed per team in /v1/stats.
    # A constant server default: rows from before migration 0003 read as no usage.
    llm_calls: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    llm_prompt_tokens: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    llm_completion_tokens: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    llm_cost: Mapped[float | None] = mapped_column(Float)  # only where prices are configured


class JobEvent(Base):
    __tablename__ = "job_events"

    # The autoincrement id is the SSE event id: clients resume with Last-Event-ID.
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    stage: Mapped[str | None] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(32))
    message: Mapped[str] = mapped_column(Text, default="")
    data: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class Artifact(Base):
    __tablename__ = "artifacts"
    __table_args__ = (UniqueConstraint("job_id", "name", name="uq_artifacts_job_id_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(255))
    blob_sha256: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(BigInteger)
    content_type: Mapped[str] = mapped_column(String(128), default="application/octet-stream")


class UiSession(Base):
    """A dashboard sign-in (api/ui/session.py). The row is the session: signing out deletes it, so a copy of
    the cookie replayed afterwards finds nothing. `id` is the SHA-256 of the cookie's random session id,
    never the id itself: a read of this table gives no usable cookie."""

    __tablename__ = "ui_sessions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    key_id: Mapped[int] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"), index=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)  # expired rows are swept at sign-in
class StrategyOutcome(Base):
    """How one job's plans of one strategy fared: the provenance of the team's AVOID list.

    One row per (job, strategy label of agents.planner.STRATEGIES); the AVOID list is
    computed from these rows (service/strategy_memory.py), never stored as a verdict,
    so it always says which jobs it rests on.
    """

    __tablename__ = "strategy_outcomes"
    __table_args__ = (
        UniqueConstraint("job_id", "strategy", name="uq_strategy_outcomes_job_id_strategy"),
        Index("ix_strategy_outcomes_team_strategy", "team_id", "strategy"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    strategy: Mapped[str] = mapped_column(String(64))
    attempts: Mapped[int] = mapped_column(Integer)
    successes: Mapped[int] = mapped_column(Integer)
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
