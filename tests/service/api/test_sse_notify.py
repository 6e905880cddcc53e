"""Event streams fed by one notifier (service.notify: PostgreSQL NOTIFY, or the in-process feed
on SQLite) and capped per team (api.stream_limit), over real HTTP on both databases.

The apps here re-read on their own only once an hour (sse_resync_interval_s=3600): whatever a
stream receives within the tests' few seconds came through the notifier.
"""
from __future__ import annotations

import asyncio
import json
import threading
import time

import httpx
import pytest
from sqlalchemy import event

from tests.service.api.conftest import LiveServer, ScriptedWorker, make_api

NO_RESYNC = 3600.0


class Stream:
    """One SSE connection read in a thread: its messages, as they arrive."""

    def __init__(self, url: str, key: str, headers: dict | None = None):
        self.messages: list[dict] = []
        self.status: int | None = None
        self.headers: dict = {}
        self.body = b""
        self.opened = threading.Event()
        self.changed = threading.Condition()
        self.done = threading.Event()
        self._stop = False
        self._client = httpx.Client(timeout=60)
        self._thread = threading.Thread(target=self._read, args=(url, key, headers or {}), daemon=True)
        self._thread.start()

    def _read(self, url, key, headers) -> None:
        try:
            with self._client.stream("GET", url, headers={"Authorization": f"Bearer {key}", **headers}) as r:
                self.status, self.headers = r.status_code, dict(r.headers)
                self.opened.set()
                if r.status_code != 200:
                    self.body = r.read()
                    return
                current: dict = {}
                for line in r.iter_lines():
                    if self._stop:
                        return
                    if line == "":
                        if "data" in current:
                            with self.changed:
                                self.messages.append(current)
                                self.changed.notify_all()
                        current = {}
                    elif not line.startswith(":"):
                        name, _, value = line.partition(": ")
                        current[name] = value
        except (httpx.HTTPError, OSError, RuntimeError):
            pass  # closed by close()
        finally:
            self.opened.set()
            self.done.set()
            with self.changed:
                self.changed.notify_all()

    def ids(self) -> list[int]:
        return [int(m["id"]) for m in self.messages if "id" in m]

    def wait_for(self, predicate, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        with self.changed:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0 or (self.done.is_set() and not predicate(self)):
                    return predicate(self)
                self.changed.wait(min(left, 0.2))
        return True

    def close(self) -> None:
        """Drop the connection (as a client going away does)."""
        self._stop = True
        self._client.close()


@pytest.fixture
def quiet_api(settings, team_key):
    """An app that never re-reads by itself within a test: streams hear only the notifier."""
    a = make_api(settings, team_key, sse_resync_interval_s=NO_RESYNC)
    with a.client:
        yield a


@pytest.fixture
def quiet_live(quiet_api):
    with LiveServer(quiet_api.app) as server:
        yield server


def events_url(live, job_id: str) -> str:
    return f"{live.url}/v1/jobs/{job_id}/events"


def test_stream_gets_events_written_before_and_after_it_subscribed(quiet_api, quiet_live):
    api, worker = quiet_api, ScriptedWorker(quiet_api)
    job = api.submit().json()
    worker.claim(job["id"])
    before = [worker.event(job["id"], "load", f"before {i}") for i in range(3)]

    stream = Stream(events_url(quiet_live, job["id"]), api.key)
    assert stream.wait_for(lambda s: set(before) <= set(s.ids())), stream.messages  # the catch-up
    kinds = [m["event"] for m in stream.messages]
    assert kinds[:2] == ["status", "status"]  # queued, running: written before it subscribed too

    after = []
    for i in range(3):
        t0 = time.monotonic()
        after.append(worker.event(job["id"], "search", f"after {i}"))
        assert stream.wait_for(lambda s: after[-1] in s.ids(), timeout=5), stream.messages
        assert time.monotonic() - t0 < 5  # notified, not re-read on a timer (an hour here)
    worker.finish(job["id"], outcome="optimized", speedup=1.2)
    assert stream.wait_for(lambda s: s.messages and s.messages[-1]["event"] == "end")
    ids = stream.ids()
    assert ids == sorted(ids) and len(ids) == len(set(ids)), "out of order or delivered twice"
    assert set(before + after) <= set(ids)
    assert json.loads(stream.messages[-1]["data"])["status"] == "succeeded"
    assert stream.done.wait(5), "the stream did not end after the job ended"


def _count_event_reads(engine, exclude_thread: int) -> list:
    """Every SELECT on job_events that `engine` runs outside the writer's thread."""
    seen: list = []

    def before(conn, cursor, statement, parameters, context, executemany):
        if threading.get_ident() != exclude_thread and statement.lstrip().upper().startswith("SELECT") \
                and "job_events" in statement:
            seen.append(statement)

    event.listen(engine, "before_cursor_execute", before)  # the app's own engine: gone with the app
    return seen


def test_n_streams_do_not_cause_n_database_polls(quiet_api, quiet_live):
    """N open streams: no reads at all while nothing happens, and one read per change (not N)."""
    api, worker = quiet_api, ScriptedWorker(quiet_api)
    n = 24
    jobs = [api.submit(content=f"x = {i}\n".encode()).json()["id"] for i in range(2)]
    for job_id in jobs:
        worker.claim(job_id)
    reads = _count_event_reads(api.app.state.read_engine, threading.get_ident())
    streams = [Stream(events_url(quiet_live, jobs[i % 2]), api.key) for i in range(n)]
    for s in streams:
        assert s.wait_for(lambda s: len(s.ids()) >= 2), s.messages  # queued + running: caught up
    from kernelopt.service.notify import feed_for

    assert feed_for(api.settings.effective_database_url).connected.wait(5)
    time.sleep(0.5)  # the listener's first connect re-reads each followed job once
    catch_up = len(reads)
    assert catch_up <= n + len(jobs), f"{catch_up} reads to catch {n} streams up"  # one each at most

    # idle: no stream polls
    reads.clear()
    time.sleep(2.0)
    assert reads == [], f"{len(reads)} event reads in 2 s with {n} idle streams"

    # one change: every stream of that job gets it, from about one read
    new = worker.event(jobs[0], "search", "candidate 1")
    for s in streams[0::2]:
        assert s.wait_for(lambda s: new in s.ids(), timeout=5), s.messages
    time.sleep(0.3)
    assert 1 <= len(reads) <= 3, f"{len(reads)} reads for one event followed by {n // 2} streams"
    assert all(new not in s.ids() for s in streams[1::2])  # the other job's streams read nothing new

    # ten changes on both jobs: reads grow with the changes, not with changes x streams
    reads.clear()
    last = [worker.event(jobs[i % 2], "search", f"step {i}") for i in range(10)]
    for i, s in enumerate(streams):
        wanted = last[-2 + i % 2]
        assert s.wait_for(lambda s, wanted=wanted: wanted in s.ids(), timeout=5)
    assert len(reads) <= 12, f"{len(reads)} reads for 10 events and {n} streams"
    hubs = list(api.app.state.sse_hubs.values())
    assert sum(h.streams for h in hubs) == n
    for s in streams:
        s.close()


def test_stream_cap_per_team_is_429_with_retry_after(settings, make_team):
    settings = settings.model_copy(update={"max_sse_streams_per_team": 2})
    a, b = make_team(), make_team()
    api = make_api(settings, a, sse_resync_interval_s=NO_RESYNC)
    with api.client, LiveServer(api.app) as live:
        job = api.submit().json()["id"]
        open_ = [Stream(events_url(live, job), api.key) for _ in range(2)]
        for s in open_:
            assert s.wait_for(lambda s: s.ids()), (s.status, s.body)
        r = httpx.get(events_url(live, job), headers=api.headers(), timeout=10)
        assert r.status_code == 429, r.text
        assert int(r.headers["retry-after"]) >= 1
        detail = r.json()["detail"]
        assert "KERNELOPT_MAX_SSE_STREAMS_PER_TEAM" in detail and "limit 2" in detail, detail
        # another team is not affected, and polls are never limited
        other = api.submit(key=b.key).json()["id"]
        s_b = Stream(events_url(live, other), b.key)
        assert s_b.wait_for(lambda s: s.ids()), (s_b.status, s_b.body)
        assert api.client.get(f"/v1/jobs/{job}", headers=api.headers()).status_code == 200
        # a stream that ends gives its slot back
        assert api.client.post(f"/v1/jobs/{job}/cancel", headers=api.headers()).json()["status"] == "cancelled"
        for s in open_:
            assert s.done.wait(10), "a stream of an ended job stayed open"
        deadline = time.monotonic() + 5
        while api.app.state.stream_slots.local_count(api.team.id) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert api.app.state.stream_slots.local_count(api.team.id) == 0
        again = Stream(events_url(live, job), api.key)
        assert again.wait_for(lambda s: s.messages and s.messages[-1]["event"] == "end"), (again.status, again.body)
        s_b.close()


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_stream_cap_is_shared_by_api_processes_through_redis(pg_url, redis_url, tmp_path, make_team):
    """Two API processes (two apps, each its own slots) on one Redis: the cap is over both."""
    from kernelopt.service.settings import Settings

    settings = Settings(database_url=pg_url, broker_url=redis_url, data_dir=tmp_path / "data",
                        max_sse_streams_per_team=2)
    team = make_team()
    one = make_api(settings, team, sse_resync_interval_s=NO_RESYNC)
    two = make_api(settings, team, sse_resync_interval_s=NO_RESYNC)
    with one.client, two.client, LiveServer(one.app) as live_one, LiveServer(two.app) as live_two:
        job = one.submit().json()["id"]
        s1 = Stream(events_url(live_one, job), one.key)
        s2 = Stream(events_url(live_two, job), one.key)
        for s in (s1, s2):
            assert s.wait_for(lambda s: s.ids()), (s.status, s.body)
        for live in (live_one, live_two):
            r = httpx.get(events_url(live, job), headers=one.headers(), timeout=10)
            assert r.status_code == 429, r.text
            assert "over all API processes" in r.json()["detail"]
        # the slots live in Redis, one member per open stream, and leave with the stream
        import redis

        client = redis.Redis.from_url(redis_url)
        key = f"kernelopt:sse-streams:team:{team.team.id}"
        assert client.zcard(key) == 2
        s1.close()
        ScriptedWorker(one).claim(job)
        ScriptedWorker(one).finish(job)
        assert s1.done.wait(10) and s2.done.wait(10)
        deadline = time.monotonic() + 5
        while client.zcard(key) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert client.zcard(key) == 0
        client.close()


def test_redis_slots_of_a_dead_process_expire(redis_url):
    """A process that died holding slots: its leases run out and the team can stream again."""
    from kernelopt.api.stream_limit import StreamsFull, StreamSlots

    async def scenario():
        dead = StreamSlots(1, redis_url, lease_s=1.0)
        await dead.acquire(987654321)  # never released: the process "dies" ...
        for task in dead._renewers.values():
            task.cancel()  # ... and renews nothing
        alive = StreamSlots(1, redis_url, lease_s=1.0)
        with pytest.raises(StreamsFull):
            await alive.acquire(987654321)
        await asyncio.sleep(1.3)
        slot = await alive.acquire(987654321)
        await alive.release(slot)
        await alive.close()
        await dead.close()

    asyncio.run(scenario())


def test_redis_leases_of_open_streams_are_renewed(redis_url):
    from kernelopt.api.stream_limit import StreamsFull, StreamSlots

    async def scenario():
        slots = StreamSlots(1, redis_url, lease_s=0.6)
        slot = await slots.acquire(987654322)
        await asyncio.sleep(1.5)  # more than two leases: only the renewals keep it
        other = StreamSlots(1, redis_url, lease_s=0.6)
        with pytest.raises(StreamsFull):
            await other.acquire(987654322)
        await slots.release(slot)
        await asyncio.sleep(0.2)  # released in the background, in batches
        await other.release(await other.acquire(987654322))
        await slots.close()
        await other.close()

    asyncio.run(scenario())


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_listener_reconnects_and_streams_catch_up(pg_url, tmp_path, make_team):
    """The LISTEN connection is killed: it reconnects, and what was written meanwhile still arrives."""
    import psycopg

    from kernelopt.service.settings import Settings
    from tests.service.conftest import PG_ADMIN

    settings = Settings(database_url=pg_url, broker_url=None, data_dir=tmp_path / "data")
    api = make_api(settings, make_team(), sse_resync_interval_s=NO_RESYNC)
    worker = ScriptedWorker(api)
    with api.client, LiveServer(api.app) as live:
        job = api.submit().json()["id"]
        worker.claim(job)
        stream = Stream(events_url(live, job), api.key)
        assert stream.wait_for(lambda s: len(s.ids()) >= 2)
        from kernelopt.service.notify import feed_for

        feed = feed_for(settings.effective_database_url)
        assert feed.connected.wait(5)
        connects = feed.connects
        dbname = pg_url.rsplit("/", 1)[1]
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            killed = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                   "WHERE datname = %s AND query LIKE 'LISTEN %%'", (dbname,)).fetchall()
        assert killed, "no LISTEN connection found"
        missed = worker.event(job, "search", "written while the listener was away")
        assert stream.wait_for(lambda s: missed in s.ids(), timeout=15), stream.messages
        assert feed.connects > connects
        later = worker.event(job, "search", "after the reconnect")
        assert stream.wait_for(lambda s: later in s.ids(), timeout=5)
        stream.close()


def test_a_thousand_streams_starting_and_ending_at_once_leave_no_slot_behind(redis_url):
    """Acquired and released all at once, through a few Redis connections: none refused, none lost."""
    import redis

    from kernelopt.api.stream_limit import KEY, StreamsFull, StreamSlots

    team = 987654323

    async def scenario():
        slots = StreamSlots(1000, redis_url)
        held = await asyncio.gather(*(slots.acquire(team) for _ in range(1000)))
        assert all(s.in_redis for s in held)
        with pytest.raises(StreamsFull):
            await slots.acquire(team)
        await asyncio.gather(*(slots.release(s) for s in held))
        for _ in range(50):
            if not redis.Redis.from_url(redis_url).zcard(KEY.format(team_id=team)):
                break
            await asyncio.sleep(0.1)
        await slots.close()

    asyncio.run(scenario())
    assert redis.Redis.from_url(redis_url).zcard(KEY.format(team_id=team)) == 0


def test_taking_a_slot_again_with_the_same_token_keeps_it(redis_url):
    """A retried acquire (its first run took the slot, its reply timed out) neither fails nor takes two."""
    import redis

    from kernelopt.api.stream_limit import _ACQUIRE, KEY

    r = redis.Redis.from_url(redis_url)
    key = KEY.format(team_id=987654324)
    r.delete(key)
    take = r.register_script(_ACQUIRE)
    assert take(keys=[key], args=[1, 60, "tok-a"]) == 1
    assert take(keys=[key], args=[1, 60, "tok-a"]) == 1  # the retry: the same slot, not "full"
    assert take(keys=[key], args=[1, 60, "tok-b"]) == -1  # another stream is refused
    assert r.zcard(key) == 1
    r.delete(key)


def test_an_unreachable_redis_leaves_the_cap_to_this_process_after_a_few_quick_retries(caplog):
    """Redis refusing connections: each stream is counted here, the cap still holds, nothing hangs."""
    from kernelopt.api.stream_limit import StreamsFull, StreamSlots

    async def scenario():
        slots = StreamSlots(2, "redis://127.0.0.1:1/0")  # port 1: connection refused
        started = time.monotonic()
        held = [await slots.acquire(7), await slots.acquire(7)]
        assert [s.in_redis for s in held] == [False, False]
        with pytest.raises(StreamsFull) as full:
            await slots.acquire(7)
        assert (full.value.open_streams, full.value.shared) == (2, False)
        for s in held:
            await slots.release(s)
        assert slots.local_count(7) == 0
        await slots.close()
        return time.monotonic() - started

    with caplog.at_level("WARNING", logger="kernelopt.api"):
        elapsed = asyncio.run(scenario())
    assert elapsed < 15, elapsed  # three tries of at most ~1 s backoff each, per acquire
    assert sum("counting this process's streams only" in r.getMessage() for r in caplog.records) == 1


def test_a_quiet_stream_gets_keepalives_and_then_its_events(settings, team_key):
    api = make_api(settings, team_key, sse_resync_interval_s=NO_RESYNC, sse_keepalive_s=1.0)
    with api.client, LiveServer(api.app) as live:
        job = api.submit().json()["id"]
        lines: list[str] = []
        claimed = False
        with httpx.stream("GET", events_url(live, job), headers=api.headers(), timeout=20) as r:
            for line in r.iter_lines():
                lines.append(line)
                if lines.count(": keepalive") == 2 and not claimed:
                    ScriptedWorker(api).claim(job)  # and then an event
                    claimed = True
                if line.startswith("data: ") and "running on" in line:
                    break
        assert lines.count(": keepalive") == 2
        assert any(line.startswith("id: ") for line in lines)  # the catch-up came first
