"""Response models of the API (pydantic): what the OpenAPI document promises and the dashboard reads."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Optional

from pydantic import BaseModel, Field

JobStatus = Literal["queued", "running", "succeeded", "failed", "cancelled", "crashed"]
Outcome = Literal["optimized", "matched", "fallback", "failed"]


class Problem(BaseModel):
    detail: str = Field(description="what went wrong, for a human")


class JobLinks(BaseModel):
    self: str
    events: str
    artifacts: str
    cancel: str


class JobOut(BaseModel):
    id: str
    status: JobStatus
    stage: Optional[str] = None
    progress: float = Field(0.0, description="0..1 within the job")
    outcome: Optional[Outcome] = None
    speedup: Optional[float] = Field(None, description="vs the compiler baseline")
    cause: Optional[str] = None
    error: Optional[str] = None
    filename: str
    tag: Optional[str] = None
    options: dict[str, Any] = Field(default_factory=dict)
    has_weights: bool = False
    attempts: int = 0
    cancel_requested: bool = False
    created_at: datetime
    started_at: Optional[datetime] = None
    finished_at: Optional[datetime] = None
    timings: dict[str, float] = Field(default_factory=dict, description="seconds per stage (engine's stage_seconds)")
    baseline_ms: Optional[float] = None
    optimized_ms: Optional[float] = None
    noise_pct: Optional[float] = None
    precision: Optional[str] = None
    reduced_precision: Optional[bool] = None
    gpu_seconds: float = 0.0
    links: JobLinks


class JobList(BaseModel):
    items: list[JobOut]
    next_cursor: Optional[str] = Field(None, description="pass as ?cursor= for the next page; null on the last page")


class ArtifactOut(BaseModel):
    name: str
    size: int
    sha256: str
    content_type: str
    url: str


class ArtifactList(BaseModel):
    job_id: str
    items: list[ArtifactOut]


class Stats(BaseModel):
    team: str
    since: Optional[datetime] = None
    until: Optional[datetime] = None
    tag: Optional[str] = None
    total: int = Field(description="jobs created in the range (with the tag)")
    by_status: dict[str, int]
    outcomes: dict[str, int] = Field(description="finished jobs by outcome; crashed and cancelled counted apart")
    finished: int = Field(description="jobs in the geomean: succeeded, failed or crashed")
    geomean_speedup: Optional[float] = Field(
        None, description="over finished jobs, the speedup deployed: an optimized job's, 1.0 for every other")
    geomean_speedup_optimized: Optional[float] = Field(None, description="over optimized jobs only")
    gpu_seconds: float
    gpu_hours: float


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    status: Literal["ready", "not ready"]
    checks: dict[str, str]
