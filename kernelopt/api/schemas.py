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
    speedup: Optional[float] = Field(
        None, description="deployed, vs the compiler baseline (1.0 when the compiler's code is kept); null when "
        "no speed was measured (see `timing`)")
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
    baseline_ms: Optional[float] = Field(None, description="measured on a GPU; null when not measured")
    optimized_ms: Optional[float] = Field(None, description="measured on a GPU; null when not measured")
    noise_pct: Optional[float] = None
    timing: Optional[Literal["measured", "not-measured"]] = Field(
        None, description="whether the speed was measured on a GPU; not-measured: speedup and times are null "
        "(e.g. no GPU: the Triton interpreter checks correctness only); null until the engine reports")
    timing_note: Optional[str] = Field(None, description="why the speed was not measured")
    precision: Optional[str] = None
    reduced_precision: Optional[bool] = None
    gpu_seconds: float = 0.0
    llm_calls: int = Field(0, description="LLM calls of the job's agents (planner, executor); 0 without `llm`")
    llm_prompt_tokens: int = 0
    llm_completion_tokens: int = 0
    llm_cost: Optional[float] = Field(None, description="where the workers have LLM prices configured")
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
    finished: int = Field(description="succeeded, failed or crashed jobs")
    measured: int = Field(description="jobs in the geomeans: succeeded jobs whose speed was measured on a GPU")
    not_measured: int = Field(description="finished jobs without a measured speed, in no geomean: failed, crashed, "
                              "run without a GPU (their timing is not-measured), or with no speedup recorded "
                              "(never counted as 1.0)")
    geomean_speedup: Optional[float] = Field(
        None, description="over measured jobs only, the speedup deployed: an optimized job's, 1.0 for a matched or "
        "fallback one (the compiler's code is kept); null when no job was measured")
    geomean_speedup_optimized: Optional[float] = Field(None, description="over measured optimized jobs only")
    gpu_seconds: float
    gpu_hours: float
    llm_calls: int = Field(0, description="LLM calls of the agents (planner, executor) over these jobs")
    llm_prompt_tokens: int = 0
    llm_completion_tokens: int = 0
    llm_total_tokens: int = 0
    llm_cost: Optional[float] = Field(None, description="where the workers have LLM prices configured")


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    status: Literal["ready", "not ready"]
    checks: dict[str, str]
