"""Server-Sent Events for a job: the events table, polled with a short sleep (no extra broker).

Every event carries `id: <event id>` so a client resumes with Last-Event-ID (or ?after=).
The stream ends with an `end` event (the job as JSON, no id) once the job is terminal and
every event up to then has been sent.
"""
from __future__ import annotations

import asyncio
import json
import time
from typing import AsyncIterator, Callable

import anyio
import anyio.to_thread

POLL_INTERVAL_S = 0.5
KEEPALIVE_S = 15.0
RETRY_MS = 2000


def format_event(data: dict, *, event: str | None = None, id: int | None = None) -> str:
    lines = []
    if id is not None:
        lines.append(f"id: {id}")
    if event:
        lines.append(f"event: {event}")
    payload = json.dumps(data, separators=(",", ":"), default=str)
    lines.extend(f"data: {line}" for line in payload.splitlines() or [""])
    return "\n".join(lines) + "\n\n"


async def job_event_stream(fetch: Callable[[int], tuple[list[dict], dict | None, bool]], after: int,
                           *, poll_interval_s: float = POLL_INTERVAL_S,
                           limiter: anyio.CapacityLimiter | None = None) -> AsyncIterator[str]:
    """`fetch(after)` → (events after `after` as dicts with an "id", the job as a dict, job terminal?).

    `fetch` runs in the threadpool with its own short-lived session, so an open stream holds
    no database connection between polls.
    """
    yield f"retry: {RETRY_MS}\n\n"
    last_sent = time.monotonic()
    while True:
        events, job, terminal = await anyio.to_thread.run_sync(fetch, after, limiter=limiter)
        if job is None:  # deleted while streaming
            yield format_event({"detail": "job not found"}, event="error")
            return
        for ev in events:
            after = ev["id"]
            yield format_event(ev, event=ev.get("kind") or "message", id=ev["id"])
            last_sent = time.monotonic()
        if events:
            continue  # maybe more than one page is waiting
        if terminal:
            yield format_event(job, event="end")
            return
        if time.monotonic() - last_sent >= KEEPALIVE_S:
            yield ": keepalive\n\n"
            last_sent = time.monotonic()
        await asyncio.sleep(poll_interval_s)
