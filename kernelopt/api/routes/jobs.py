"""/v1/jobs: submit, get, list, cancel, live events, artifacts."""
from __future__ import annotations

import logging
import mimetypes
import re
from datetime import datetime, timezone
from typing import Annotated, Any

import anyio
import anyio.to_thread
from fastapi import APIRouter, Header, HTTPException, Path, Query, Request, Response, status
from fastapi.responses import StreamingResponse
from sqlalchemy import bindparam, select
from starlette.concurrency import run_in_threadpool

from kernelopt.api.deps import (
    DispatcherDep,
    SessionDep,
    SettingsDep,
    TeamDep,
    TeamRef,
    db_limiter,
    in_db_thread,
    read_db,
)
from kernelopt.api.options import options_summary, parse_options
from kernelopt.api.schemas import ArtifactList, ArtifactOut, JobLinks, JobList, JobOut, JobStatus, Outcome, Problem
from kernelopt.api.sse import StreamHub, job_event_stream
from kernelopt.api.stream_limit import Slot, StreamsFull, StreamSlots
from kernelopt.api.uploads import read_submission
from kernelopt.service import job_queries
from kernelopt.service.jobs import IdempotencyConflict, QueueFull, create_job, request_cancel
from kernelopt.service.notify import feed_for
from kernelopt.storage.blobs import BlobCorrupt, BlobNotFound
from kernelopt.storage.models import TERMINAL_STATUSES, Job

log = logging.getLogger("kernelopt.api")

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

# Text that reaches the database must be printable: PostgreSQL refuses NUL bytes in text.
PRINTABLE = r"^[^\x00-\x1f\x7f]*$"
JobId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$",
                            description="the job id (32 hex characters)")]
Tag = Annotated[str | None, Query(max_length=200, pattern=PRINTABLE)]
# OpenAPI `responses` entries (FastAPI's type for them), spread into the routes' own.
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": Problem, "description": "no such job for this team"}}
AUTH: dict[int | str, dict[str, Any]] = {401: {"model": Problem, "description": "missing or invalid API key"}}
STREAMS_RETRY_AFTER_S = 15


def job_links(job_id: str) -> dict[str, str]:
    base = f"/v1/jobs/{job_id}"
    return {"self": base, "events": f"{base}/events", "artifacts": f"{base}/artifacts", "cancel": f"{base}/cancel"}


def job_out(job: Any) -> JobOut:
    result = job.result or {}
    return JobOut(
        id=job.id, status=job.status, stage=job.stage, progress=job.progress or 0.0, outcome=job.outcome,
        speedup=job.speedup, cause=job.cause, error=job.error, filename=job.filename, tag=job.tag,
        options=job.options or {}, has_weights=job.weights_blob is not None, attempts=job.attempts or 0,
        cancel_requested=bool(job.cancel_requested), created_at=job.created_at, started_at=job.started_at,
        finished_at=job.finished_at, timings=result.get("stage_seconds") or {},
        baseline_ms=result.get("baseline_ms"), optimized_ms=result.get("optimized_ms"),
        noise_pct=result.get("noise_pct"), precision=result.get("precision") or (job.options or {}).get("precision"),
        reduced_precision=result.get("reduced_precision"), gpu_seconds=job.gpu_seconds or 0.0,
        timing=result.get("timing"), timing_note=result.get("timing_note"),
        llm_calls=job.llm_calls or 0, llm_prompt_tokens=job.llm_prompt_tokens or 0,
        llm_completion_tokens=job.llm_completion_tokens or 0, llm_cost=job.llm_cost,
        links=JobLinks(**job_links(job.id)))


def _utc(value: datetime | None) -> datetime | None:
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value


SUBMIT_BODY = {
    "required": True,
    "content": {"multipart/form-data": {"schema": {
        "type": "object",
        "required": ["file"],
        "properties": {
            "file": {"type": "string", "format": "binary",
                     "description": "the model file (KernelBench convention) or a Triton kernel file"},
            "weights": {"type": "string", "format": "binary", "description": "optional safetensors weights"},
            "options": {"type": "string", "description": options_summary()},
            "tag": {"type": "string", "maxLength": 200, "description": "free label to filter and aggregate jobs by"},
        },
    }}},
}


@router.post(
    "", status_code=status.HTTP_202_ACCEPTED, response_model=JobOut, summary="Submit a job",
    openapi_extra={"requestBody": SUBMIT_BODY},
    responses={
        200: {"model": JobOut, "description": "an earlier submission with the same Idempotency-Key (same job)"},
        **AUTH,
        409: {"model": Problem, "description": "Idempotency-Key reused with a different request"},
        413: {"model": Problem, "description": "upload over KERNELOPT_MAX_UPLOAD_BYTES"},
        415: {"model": Problem, "description": "not multipart/form-data"},
        422: {"model": Problem, "description": "bad options or form"},
        429: {"model": Problem, "description": "too many queued jobs for the team (see Retry-After)"},
        503: {"model": Problem, "description": "stored but not queued; retry with the same Idempotency-Key"},
    })
async def submit_job(
    request: Request, response: Response, team: TeamDep, settings: SettingsDep, dispatcher: DispatcherDep,
    idempotency_key: Annotated[str | None, Header(max_length=255, pattern=r"^[\x20-\x7e]*$", description=(
        "makes a retried POST safe: the same key returns the same job; the same key with a different body is refused"
    ))] = None,
) -> JobOut:
    sub = await read_submission(request, settings.max_upload_bytes)
    options = parse_options(sub.options_text)  # one model (api.options), before anything is stored: 422 if bad
    if sub.tag is not None and len(sub.tag) > 200:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail="`tag` is longer than 200 characters")
    if sub.tag is not None and not re.match(PRINTABLE, sub.tag):
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail="`tag` has control characters")
    key = idempotency_key.strip() if idempotency_key else None
    app = request.app

    def store():
        with app.state.sessionmaker() as session:
            try:
                return create_job(session, team.id, sub.filename, sub.data, options, sub.weights, key or None,
                                  sub.tag, app.state.blobs, settings)
            except IdempotencyConflict as exc:
                raise HTTPException(status.HTTP_409_CONFLICT, detail=(
                    f"Idempotency-Key {key!r} was already used for a different request "
                    f"(another file, weights or options): {exc}")) from None
            except QueueFull as exc:
                retry = max(1, int(round(getattr(exc, "retry_after_s", 30) or 30)))
                raise HTTPException(status.HTTP_429_TOO_MANY_REQUESTS, headers={"Retry-After": str(retry)}, detail=(
                    f"too many queued jobs for team {team.name!r} (limit {settings.max_queued_jobs_per_team}); "
                    f"retry after {retry} s")) from None

    job, created = await in_db_thread(request, store)
    if created or job.status == "queued":
        # A replayed POST of a still-queued job enqueues again: harmless (a worker claims a job only
        # once) and it repairs a submission whose first enqueue failed.
        try:
            await run_in_threadpool(dispatcher.enqueue, job.id)
        except Exception as exc:
            log.exception("enqueue of job %s failed", job.id)
            raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, headers={"Retry-After": "5"}, detail=(
                f"job {job.id} was stored but could not be queued ({type(exc).__name__}); "
                "retry the POST with the same Idempotency-Key")) from None
    if created:
        app.state.metrics.jobs_submitted.inc()
    response.status_code = status.HTTP_202_ACCEPTED if created else status.HTTP_200_OK
    response.headers["Location"] = f"/v1/jobs/{job.id}"
    if not created:
        response.headers["Idempotent-Replayed"] = "true"
    return job_out(job)


@router.get("", response_model=JobList, summary="List the team's jobs, newest first", responses={**AUTH})
async def list_jobs(
    request: Request, team: TeamDep,
    status_: Annotated[JobStatus | None, Query(alias="status")] = None,
    outcome: Outcome | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    tag: Tag = None,
    cursor: Annotated[str | None, Query(max_length=512, pattern=r"^[A-Za-z0-9_=-]*$",
                                        description="next_cursor of the previous page")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> JobList:
    def read(session) -> JobList:
        try:
            jobs, next_cursor = job_queries.list_jobs(
                session, team.id, status=status_, outcome=outcome, created_after=_utc(created_after),
                created_before=_utc(created_before), tag=tag, cursor=cursor, limit=limit)
        except ValueError as exc:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail=f"invalid query: {exc}") from None
        return JobList(items=[job_out(j) for j in jobs], next_cursor=next_cursor)

    return await read_db(request, read)


def _get_or_404(session, team: TeamRef, job_id: str):
    job = job_queries.get_job(session, team.id, job_id)
    if job is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no job {job_id!r} for this team")
    return job


@router.get("/{job_id}", response_model=JobOut, summary="One job: status, stage, progress, outcome",
            responses={**AUTH, **NOT_FOUND})
async def get_job(job_id: JobId, request: Request, team: TeamDep) -> Response:
    # The hot path (status polls, >= 500/s): async, one thread hop, one autocommit Core query
    # (an ORM session costs twice the CPU of the query itself), and the JSON serialized once here
    # (returning the model would make FastAPI validate it a second time).
    engine = request.app.state.read_engine

    def read() -> str | None:
        with engine.connect() as conn:
            row = conn.execute(_GET_JOB, {"job_id": job_id, "team_id": team.id}).first()
        return job_out(row).model_dump_json() if row is not None else None

    body = await in_db_thread(request, read)
    if body is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no job {job_id!r} for this team")
    return Response(body, media_type="application/json")


def _get_job_statement():
    """The team-scoped read of service.job_queries.get_job, as one precompiled Core statement."""
    table = Job.__table__
    return select(table).where(table.c.id == bindparam("job_id"), table.c.team_id == bindparam("team_id"))


_GET_JOB = _get_job_statement()


@router.post("/{job_id}/cancel", response_model=JobOut, summary="Cancel a job",
             responses={**AUTH, **NOT_FOUND,
                        202: {"model": JobOut, "description": "running: the worker stops at the next stage boundary"},
                        409: {"model": Problem, "description": "the job already finished"}})
def cancel_job(job_id: JobId, session: SessionDep, team: TeamDep, response: Response) -> JobOut:
    job = request_cancel(session, team.id, job_id)
    if job is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no job {job_id!r} for this team")
    if job.status in ("succeeded", "failed", "crashed"):
        raise HTTPException(status.HTTP_409_CONFLICT, detail=f"job {job_id} already finished ({job.status})")
    if job.status != "cancelled":
        response.status_code = status.HTTP_202_ACCEPTED
    return job_out(job)


def event_dict(ev: Any) -> dict:
    return {"id": ev.id, "job_id": ev.job_id, "at": ev.at.isoformat() if ev.at else None, "stage": ev.stage,
            "kind": ev.kind, "message": ev.message, "data": ev.data or {}}


def _read_job_events(factory, team_id: int, job_id: str, after_id: int, limit: int):
    """One read for the streams of a job: the job (status first: terminal and no newer events
    means done), then its events after `after_id`. Team-scoped like every API read."""
    with factory() as s:
        job = job_queries.get_job(s, team_id, job_id)
        if job is None:
            return [], None, True
        terminal = job.status in TERMINAL_STATUSES
        events = [event_dict(e) for e in job_queries.events_after(s, job_id, after_id, limit)]
        return events, job_out(job).model_dump(mode="json"), terminal


def stream_hub(app) -> StreamHub:
    """This process's hub of open event streams for the running event loop (created on first use)."""
    import asyncio
    from functools import partial

    loop = asyncio.get_running_loop()
    hub = app.state.sse_hubs.get(loop)
    if hub is None:
        async def run_db(fn, *args):
            return await anyio.to_thread.run_sync(fn, *args, limiter=db_limiter(app))

        hub = app.state.sse_hubs[loop] = StreamHub(
            partial(_read_job_events, app.state.read_sessionmaker), run_db,
            feed_for(app.state.settings.effective_database_url), resync_s=app.state.sse_resync_interval_s,
            keepalive_s=app.state.sse_keepalive_s)
    return hub


class _StreamResponse(StreamingResponse):
    """A streaming response that gives its stream slot back however it ends."""

    def __init__(self, *args, slot: Slot, slots: StreamSlots, **kwargs):
        super().__init__(*args, **kwargs)
        self._slot, self._slots = slot, slots

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                await self._slots.release(self._slot)


@router.get("/{job_id}/events", summary="Live events (Server-Sent Events)", response_class=StreamingResponse,
            responses={**AUTH, **NOT_FOUND, 200: {"content": {"text/event-stream": {}}, "description": (
                "`id:` is the event id (resume with Last-Event-ID or ?after=); `event:` is the kind; "
                "a final `end` event carries the job once it is terminal")},
                429: {"model": Problem, "description": (
                    "the team has KERNELOPT_MAX_SSE_STREAMS_PER_TEAM streams open (see Retry-After); "
                    "GET /v1/jobs/{id} polls are not limited")}})
async def job_events(
    request: Request, job_id: JobId, team: TeamDep,
    after: Annotated[int | None, Query(ge=0, le=2**62, description="resume after this event id")] = None,
    last_event_id: Annotated[str | None, Header(max_length=32)] = None,
) -> StreamingResponse:
    start = after or 0
    if last_event_id is not None and last_event_id.strip():
        try:
            start = max(start, int(last_event_id.strip()))
        except ValueError:
            start = -1
        if not 0 <= start <= 2**62:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT,
                                detail="Last-Event-ID must be an event id (an integer in [0, 2**62])")
    # not SessionDep: a stream must not hold a connection while it lasts
    await read_db(request, lambda session: _get_or_404(session, team, job_id))
    slots: StreamSlots = request.app.state.stream_slots
    try:
        slot = await slots.acquire(team.id)
    except StreamsFull as full:
        retry = STREAMS_RETRY_AFTER_S
        where = "over all API processes" if full.shared else "on this API process"
        raise HTTPException(status.HTTP_429_TOO_MANY_REQUESTS, headers={"Retry-After": str(retry)}, detail=(
            f"too many open event streams for team {team.name!r}: {full.open_streams} {where} "
            f"(limit {full.limit}, KERNELOPT_MAX_SSE_STREAMS_PER_TEAM); close one, or poll GET /v1/jobs/{job_id}; "
            f"retry after {retry} s")) from None
    return _StreamResponse(job_event_stream(stream_hub(request.app), team.id, job_id, start),
                           slot=slot, slots=slots, media_type="text/event-stream",
                           headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def _artifact_out(job_id: str, a: Any) -> ArtifactOut:
    return ArtifactOut(name=a.name, size=a.size, sha256=a.blob_sha256, content_type=a.content_type,
                       url=f"/v1/jobs/{job_id}/artifacts/{a.name}")


@router.get("/{job_id}/artifacts", response_model=ArtifactList, summary="The job's artifacts",
            responses={**AUTH, **NOT_FOUND})
async def list_artifacts(job_id: JobId, request: Request, team: TeamDep) -> ArtifactList:
    def read(session) -> ArtifactList:
        rows = job_queries.list_artifacts(session, team.id, job_id)
        if rows is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no job {job_id!r} for this team")
        return ArtifactList(job_id=job_id, items=[_artifact_out(job_id, a) for a in rows])

    return await read_db(request, read)


@router.get("/{job_id}/artifacts/{name:path}", summary="Download one artifact", response_class=StreamingResponse,
            responses={**AUTH, 404: {"model": Problem, "description": "no such job or artifact"},
                       500: {"model": Problem, "description": (
                           "the stored bytes failed their integrity check (sha256 or size differ from what was "
                           "recorded): nothing is served")},
                       200: {"content": {"application/octet-stream": {}}}})
def download_artifact(job_id: JobId, name: Annotated[str, Path(max_length=255, pattern=PRINTABLE)], request: Request,
                      team: TeamDep) -> StreamingResponse:
    """The artifact's bytes, verified: the blob is hashed (sha256 and size against what was recorded when
    it was stored) before anything is sent, and hashed again while it streams; the last chunk is held
    back until that second hash matched too, so bytes altered on disk are never served whole."""
    import hashlib

    with request.app.state.read_sessionmaker() as session:  # closed before the (maybe long) download streams
        _get_or_404(session, team, job_id)
        art = job_queries.get_artifact(session, team.id, job_id, name)
    if art is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"job {job_id} has no artifact {name!r}")
    sha, size = art.blob_sha256, art.size
    try:
        handle = request.app.state.blobs.open_verified(sha, size)
    except (BlobNotFound, ValueError):
        log.error("artifact %s of job %s: blob %s missing", name, job_id, sha)
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"the content of artifact {name!r} is missing") from None
    except BlobCorrupt as exc:
        log.error("artifact %s of job %s (team %s): %s; not served", name, job_id, team.id, exc)
        raise HTTPException(status.HTTP_500_INTERNAL_SERVER_ERROR, detail=(
            f"the stored content of artifact {name!r} failed its integrity check ({exc.problem}); it is not "
            f"served. The operator can restore blob {sha} from a backup.")) from None

    def chunks():
        digest, sent, held = hashlib.sha256(), 0, b""
        with handle:
            while chunk := handle.read(256 * 1024):
                if held:
                    yield held
                digest.update(chunk)
                sent += len(chunk)
                held = chunk
        if sent != size or digest.hexdigest() != sha:
            # Changed on disk after it was verified: end the response short of its Content-Length.
            log.error("artifact %s of job %s (team %s): blob %s changed while it was sent; response aborted",
                      name, job_id, team.id, sha)
            raise BlobCorrupt(sha, "changed while it was sent")
        if held:
            yield held

    content_type = art.content_type or mimetypes.guess_type(name)[0] or "application/octet-stream"
    basename = name.rsplit("/", 1)[-1]
    from urllib.parse import quote

    disposition = f"attachment; filename=\"{basename.encode('ascii', 'replace').decode().replace(chr(34), '_')}\""
    disposition += f"; filename*=UTF-8''{quote(basename)}"
    return StreamingResponse(chunks(), media_type=content_type,
                             headers={"Content-Disposition": disposition, "Content-Length": str(size)})
