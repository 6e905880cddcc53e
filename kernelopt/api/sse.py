"""Server-Sent Events for a job, fed by one notifier per API process instead of one poll per stream.

Every event carries `id: <event id>` so a client resumes with Last-Event-ID (or ?after=).
The stream ends with an `end` event (the job as JSON, no id) once the job is terminal and
every event up to then has been sent.

How a stream learns of new events:

- `service.notify` signals "job X has new events" when a writer commits them (PostgreSQL
  NOTIFY, or the in-process feed in the embedded mode); this process has ONE subscription
  to it, whatever the number of streams.
- A `StreamHub` (one per API process and event loop) holds the open streams, grouped by
  job (`JobFeed`). A signal for job X makes X's feed read X's new rows ONCE (events after the
  lowest position of its streams, plus the job's status) and hand each stream the rows it has
  not had. Signals that arrive during a read fold into one more read. Jobs nobody follows cost
  nothing; 1000 streams on one job cost one read per change, not 1000.
- No event is missed: a stream joins its feed before the feed's first read for it (the
  catch-up: every row already written after the stream's position), so whatever commits later
  signals a read that it takes part in. When the listener (re)connects, every feed re-reads
  (signals sent meanwhile are lost), and every feed re-reads every `resync_s` anyway (a slow
  safety net; every second while the listener is down, so streams degrade to one poll per job
  per second, never per stream).
"""
from __future__ import annotations

import asyncio
import collections
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("kernelopt.api")

KEEPALIVE_S = 15.0
RETRY_MS = 2000
RESYNC_S = 15.0  # the safety re-read of every followed job
DEGRADED_RESYNC_S = 1.0  # ... while the notifier is not connected
PAGE = 500  # events per read

# fetch(team_id, job_id, after_id, limit) -> (events as dicts with "id", the job as a dict or None, terminal?)
Fetch = Callable[[int, str, int, int], tuple[list[dict], "dict | None", bool]]
RunDb = Callable[..., Awaitable[Any]]


def format_event(data: dict, *, event: str | None = None, id: int | None = None) -> str:
    lines = []
    if id is not None:
        lines.append(f"id: {id}")
    if event:
        lines.append(f"event: {event}")
    payload = json.dumps(data, separators=(",", ":"), default=str)
    lines.extend(f"data: {line}" for line in payload.splitlines() or [""])
    return "\n".join(lines) + "\n\n"


@dataclass
class Batch:
    events: list[tuple[int, str]]  # (event id, the event as SSE text: formatted once for every stream)
    job: dict | None  # None: the job is gone
    terminal: bool  # the job has ended and `events` reach its last event


@dataclass(eq=False)
class Subscription:
    team_id: int
    job_id: str
    cursor: int  # the last event id handed to this stream (its resume position at first)
    pending: collections.deque = field(default_factory=collections.deque)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    last_sent: float = field(default_factory=time.monotonic)
    keepalive: bool = False  # set by the hub's tick when the stream has been quiet for keepalive_s

    def push(self, batch: Batch) -> None:
        self.pending.append(batch)
        self.wake.set()


class JobFeed:
    """The open streams of one job, and the one reader that serves them."""

    def __init__(self, hub: StreamHub, team_id: int, job_id: str):
        self.hub, self.team_id, self.job_id = hub, team_id, job_id
        self.subs: set[Subscription] = set()
        self.dirty = False
        self.task: asyncio.Task | None = None

    def poke(self) -> None:
        self.dirty = True
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while self.dirty and self.subs:
            self.dirty = False
            start = min(s.cursor for s in self.subs)
            try:
                events, job, terminal = await self.hub.run_db(self.hub.fetch, self.team_id, self.job_id, start, PAGE)
            except Exception as exc:  # the database is down: the streams wait, and the read is retried
                log.warning("event stream read of job %s failed: %s: %s", self.job_id, type(exc).__name__, exc)
                asyncio.get_running_loop().call_later(self.hub.degraded_resync_s, self.poke)
                return
            finally:
                self.hub.reads += 1
            full = len(events) >= PAGE
            events = [(ev["id"], format_event(ev, event=ev.get("kind") or "message", id=ev["id"])) for ev in events]
            for sub in list(self.subs):
                if sub.cursor < start:
                    continue  # joined during the read, further back: the next read (dirty) starts there
                new = [ev for ev in events if ev[0] > sub.cursor]
                if new:
                    sub.cursor = new[-1][0]
                ended = job is None or (terminal and not full)
                if new or ended:
                    sub.push(Batch(new, job, ended))
            if full:
                self.dirty = True


class StreamHub:
    """The open event streams of one API process (one event loop), fed by one ChangeFeed."""

    def __init__(self, fetch: Fetch, run_db: RunDb, feed, *, resync_s: float = RESYNC_S,
                 degraded_resync_s: float = DEGRADED_RESYNC_S, keepalive_s: float = KEEPALIVE_S):
        self.fetch, self.run_db, self.feed = fetch, run_db, feed
        self.resync_s, self.degraded_resync_s, self.keepalive_s = resync_s, degraded_resync_s, keepalive_s
        self.loop = asyncio.get_running_loop()
        self.jobs: dict[tuple[int, str], JobFeed] = {}
        self._teams_of: dict[str, set[int]] = {}  # job id -> the teams in the keys of self.jobs
        self.streams = 0
        self.reads = 0  # database reads done for streams (one per job and change, not per stream)
        self.signals = 0  # change signals received
        self._unsubscribe: Callable[[], None] | None = None
        self._resync_task: asyncio.Task | None = None

    # -- called from the feed's thread (or a writer's thread, in-process) ----------------------
    def _signal(self, job_ids: frozenset[str] | None) -> None:
        try:
            self.loop.call_soon_threadsafe(self._on_change, job_ids)
        except RuntimeError:  # the loop is closed
            pass

    def _on_change(self, job_ids: frozenset[str] | None) -> None:
        self.signals += 1
        if job_ids is None:
            for feed in self.jobs.values():
                feed.poke()
            return
        for job_id in job_ids:  # most notifications are of jobs nobody here follows: a lookup each
            for team_id in self._teams_of.get(job_id, ()):
                self.jobs[(team_id, job_id)].poke()

    # -- streams -------------------------------------------------------------------------------
    def open(self, team_id: int, job_id: str, after: int) -> Subscription:
        if self._unsubscribe is None:
            self._unsubscribe = self.feed.subscribe(self._signal)
        if self._resync_task is None or self._resync_task.done():
            self._resync_task = self.loop.create_task(self._resync())
        key = (team_id, job_id)
        feed = self.jobs.get(key)
        if feed is None:
            feed = self.jobs[key] = JobFeed(self, team_id, job_id)
            self._teams_of.setdefault(job_id, set()).add(team_id)
        sub = Subscription(team_id, job_id, after)
        feed.subs.add(sub)
        self.streams += 1
        feed.poke()  # the catch-up read
        return sub

    def close(self, sub: Subscription) -> None:
        key = (sub.team_id, sub.job_id)
        feed = self.jobs.get(key)
        if feed is not None and sub in feed.subs:
            feed.subs.discard(sub)
            self.streams -= 1
            if not feed.subs:
                del self.jobs[key]
                teams = self._teams_of.get(sub.job_id, set())
                teams.discard(sub.team_id)
                if not teams:
                    self._teams_of.pop(sub.job_id, None)
        if not self.jobs and self._unsubscribe is not None:
            self._unsubscribe()  # idle: the listener may stop after its linger time
            self._unsubscribe = None

    async def _resync(self) -> None:
        """One tick a second for all the streams of the hub (a tick costs nothing when there is
        nothing to do): the keepalives of quiet streams (so a stream waits on its event alone, with
        no timer of its own), and the safety re-read: every `resync_s`, every `degraded_resync_s`
        while the notifier is not connected."""
        last = time.monotonic()
        while self.jobs:
            await asyncio.sleep(min(1.0, self.degraded_resync_s, self.resync_s))
            now = time.monotonic()
            for feed in self.jobs.values():
                for sub in feed.subs:
                    if not sub.pending and now - sub.last_sent >= self.keepalive_s:
                        sub.keepalive = True
                        sub.wake.set()
            if self.feed.connected.is_set() and now - last < self.resync_s:
                continue
            last = now
            for feed in list(self.jobs.values()):
                feed.poke()

    def shutdown(self) -> None:
        if self._resync_task is not None:
            self._resync_task.cancel()
        for feed in self.jobs.values():
            if feed.task is not None:
                feed.task.cancel()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None


async def job_event_stream(hub: StreamHub, team_id: int, job_id: str, after: int) -> AsyncIterator[str]:
    """The SSE body of one stream: its job's events after `after`, then `end` (or `error`)."""
    yield f"retry: {RETRY_MS}\n\n"
    sub = hub.open(team_id, job_id, after)
    try:
        while True:
            if not sub.pending and not sub.keepalive:
                sub.wake.clear()
                await sub.wake.wait()
            if not sub.pending:  # quiet for a while: the hub's tick asks for a keepalive
                sub.keepalive = False
                sub.last_sent = time.monotonic()
                yield ": keepalive\n\n"
                continue
            sub.keepalive = False
            while sub.pending:
                batch: Batch = sub.pending.popleft()
                if batch.job is None:  # deleted while streaming
                    yield format_event({"detail": "job not found"}, event="error")
                    return
                if batch.events:
                    yield "".join(text for _, text in batch.events)  # one write for what arrived together
                    sub.last_sent = time.monotonic()
                if batch.terminal:
                    yield format_event(batch.job, event="end")
                    return
    finally:
        hub.close(sub)
