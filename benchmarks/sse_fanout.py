"""SSE fan-out benchmark (issue 7, part 3; a script, not a test): team A holds many open event
streams while events are written to its jobs; how fast are team B's status polls?

    # PostgreSQL + Redis (the distributed shape: `kernelopt serve`, events written by a separate
    # process as Celery workers do; a fresh database is created and dropped)
    python benchmarks/sse_fanout.py --postgres postgresql://postgres@127.0.0.1:5432/postgres \\
        --broker-url redis://127.0.0.1:6379/13
    # embedded (SQLite; the events are written inside the server process, as its in-process
    # dispatcher does: the app of `kernelopt serve` plus a writer thread)
    python benchmarks/sse_fanout.py
    # a server that is already running, on a database this script can reach (to create the teams
    # and jobs and to write the events as a worker would)
    python benchmarks/sse_fanout.py --url http://127.0.0.1:8000 --database-url postgresql://...

Phases: (1) team B polls `GET /v1/jobs/{id}` (open loop, --poll-rate/s, latency counted from each
poll's due time) with no stream open: the baseline; (2) team A opens --streams streams over
--jobs-a running jobs, then one more (429 past the per-team cap: the script sets the cap to
--streams, so the refusal is shown at that size) and team B opens one (not refused: the cap is
per team); (3) team B polls again for --duration s with the streams open. Events are written
to team A's jobs at --event-rate/s in all three phases, each carrying its write time, so the
streams' delivery delay is measured too (on a sample of streams).

Reported: team B's p50/p90/p99/max in both phases, events written and delivered, delivery
delay, the server's CPU use, and on PostgreSQL the scans of the job_events table (from
pg_stat_user_tables: the database's own count of reads) per second. --repo runs the server
from another checkout (e.g. the commit before the notifier) for a before/after comparison.

Target (issue 7): team B's p99 < 50 ms while team A holds 1000 streams.

Diagnostics: `slow_polls_at` in the JSON lists the polls over 50 ms with their wall-clock due
time; with SSE_BENCH_GC_LOG=1 the embedded server logs its event-loop stalls over 30 ms and its
garbage collector's slow passes, with the same clock, so a slow poll can be told apart as the
server's own stall or the machine's.
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import json
import multiprocessing
import os
import platform
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
REPO = Path(os.environ.get("SSE_BENCH_REPO") or HERE)  # the checkout whose code serves (--repo)
sys.path.insert(0, str(REPO))

WORKER_ID = "sse-bench-writer"


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


def summary(ms: list[float]) -> dict:
    return {"count": len(ms), "p50_ms": percentile(ms, 50), "p90_ms": percentile(ms, 90),
            "p99_ms": percentile(ms, 99), "max_ms": max(ms) if ms else float("nan"),
            "mean_ms": statistics.fmean(ms) if ms else float("nan")}


def raise_fd_limit() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- database fixture (teams, jobs)

def setup_fixture(database_url: str, data_dir: Path, jobs_a: int) -> dict:
    """Teams A and B with a key each; `jobs_a` running jobs of A and one of B, claimed by this
    script's writer (so no worker runs them)."""
    from kernelopt.service.auth import create_api_key, create_team
    from kernelopt.service.jobs import claim_job, create_job, request_cancel
    from kernelopt.service.settings import Settings
    from kernelopt.storage.blobs import BlobStore
    from kernelopt.storage.db import make_engine, make_sessionmaker

    settings = Settings(database_url=database_url, data_dir=data_dir, max_queued_jobs_per_team=10_000)
    blobs = BlobStore(settings.blobs_dir)
    engine = make_engine(database_url)
    out: dict = {}
    try:
        factory = make_sessionmaker(engine)
        for team in ("a", "b"):
            with factory() as s:
                t = create_team(s, f"sse-bench-{team}-{uuid.uuid4().hex[:6]}")
                out[f"team_{team}"], out[f"key_{team}"] = t.id, create_api_key(s, t.id)
        for team, n in (("a", jobs_a), ("b", 1)):
            ids = []
            while len(ids) < n:
                with factory() as s:
                    job, _ = create_job(s, out[f"team_{team}"], "bench.py", f"# {uuid.uuid4()}\n".encode(), {},
                                        None, None, "sse-bench", blobs, settings)
                    if claim_job(s, job.id, WORKER_ID) is None:  # an embedded slot was quicker: let it go
                        request_cancel(s, out[f"team_{team}"], job.id)
                        continue
                    ids.append(job.id)
            out[f"jobs_{team}"] = ids
    finally:
        engine.dispose()
    return out


def write_events(database_url: str, job_ids: list[str], rate: float, go, stop, on_written=None) -> int:
    """Events on `job_ids` at `rate`/s in all (round robin, each with its write time in data.t),
    from `go` until `stop`; heartbeats every 5 s throughout. Returns the events written."""
    from kernelopt.service.jobs import add_event, heartbeat
    from kernelopt.storage.db import make_engine, make_sessionmaker

    engine = make_engine(database_url)
    factory = make_sessionmaker(engine)
    written, i = 0, 0
    next_beat = 0.0
    next_at = time.monotonic()
    try:
        while not stop.is_set():
            now = time.monotonic()
            if now >= next_beat:
                with factory() as s:
                    for job_id in job_ids:
                        heartbeat(s, job_id, WORKER_ID)
                next_beat = now + 5.0
            if go is not None and not go.is_set() or rate <= 0:
                time.sleep(0.05)
                next_at = time.monotonic()
                continue
            job_id = job_ids[i % len(job_ids)]
            i += 1
            with factory() as s:
                add_event(s, job_id, "search", "progress", f"candidate {i}", {"t": time.time(), "n": i})
            written += 1
            if on_written is not None:
                on_written(written)
            next_at += 1.0 / rate
            time.sleep(max(0.0, next_at - time.monotonic()))
    finally:
        engine.dispose()
    return written


def _writer_process(database_url, job_ids, rate, stop, counter) -> None:
    def count(n: int) -> None:
        counter.value = n

    write_events(database_url, job_ids, rate, None, stop, count)


# ---------------------------------------------------------------- the server

def serve_embedded_child() -> None:
    """`kernelopt serve`'s app on SQLite, plus a thread writing the events inside the server
    process, as the embedded dispatcher's slots do (SSE_BENCH_* in the environment)."""
    import uvicorn

    from kernelopt.api.app import create_app
    from kernelopt.service.settings import get_settings

    env = os.environ
    stop = threading.Event()
    jobs = env["SSE_BENCH_JOBS"].split(",")
    go_file = Path(env["SSE_BENCH_GO"])
    counter_file = Path(env["SSE_BENCH_COUNT"])

    class Go:
        def is_set(self) -> bool:
            return go_file.exists()

    def count(n: int) -> None:
        if n % 10 == 0:
            counter_file.write_text(str(n))

    if env.get("SSE_BENCH_GC_LOG"):  # diagnostics: how long the collector's passes stop the server
        import gc

        started: dict = {}

        def on_gc(phase, info) -> None:
            if phase == "start":
                started["t"] = time.perf_counter()
            elif info["generation"] == 2 or time.perf_counter() - started.get("t", 0) > 0.02:
                ms = (time.perf_counter() - started.get("t", 0)) * 1000
                print(f"gc gen{info['generation']} {ms:.1f} ms collected {info['collected']} at {time.time():.2f} "
                      f"objects {len(gc.get_objects()) if info['generation'] == 2 else '-'}", file=sys.stderr,
                      flush=True)

        gc.callbacks.append(on_gc)

        from kernelopt.api import app as app_module

        real_create_app = app_module.create_app

        def create_app_with_lag_monitor(*a, **kw):
            """The app, and a task in its event loop that reports when the loop stalls > 30 ms."""
            import asyncio

            app = real_create_app(*a, **kw)
            started_monitor: list = []

            async def watch() -> None:
                while True:
                    t0 = time.perf_counter()
                    await asyncio.sleep(0.01)
                    lag = (time.perf_counter() - t0 - 0.01) * 1000
                    if lag > 30:
                        print(f"loop lag {lag:.0f} ms at {time.time():.2f}", file=sys.stderr, flush=True)

            async def asgi(scope, receive, send):
                if not started_monitor:
                    started_monitor.append(asyncio.get_running_loop().create_task(watch()))
                await app(scope, receive, send)

            return asgi

        create_app = create_app_with_lag_monitor  # noqa: F811
    settings = get_settings()
    t = threading.Thread(target=write_events, daemon=True,
                         args=(settings.effective_database_url, jobs, float(env["SSE_BENCH_RATE"]), Go(), stop, count))
    t.start()
    signal.signal(signal.SIGTERM, lambda *a: (stop.set(), os._exit(0)))
    uvicorn.run(create_app(settings), host="127.0.0.1", port=int(env["SSE_BENCH_PORT"]), log_level="warning",
                access_log=False)


def start_server(args, env: dict, port: int, log) -> subprocess.Popen:
    python = args.python or sys.executable
    if args.embedded:
        cmd = [python, str(Path(__file__).resolve()), "--serve-embedded-child"]
    else:
        cmd = [python, "-m", "kernelopt.cli.main", "serve", "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    proc = subprocess.Popen(cmd, cwd=str(REPO), env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    import httpx

    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}; see {log.name}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"the server did not start; see {log.name}")
        time.sleep(0.2)


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    v = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return sum(v) - idle, sum(v)


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process and its children that were waited for (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- team B: status polls

class RawConnection:
    """Minimal HTTP/1.1 keep-alive GET client (tens of microseconds of CPU per request)."""

    def __init__(self, host: str, port: int, key: str):
        self.host, self.port = host, port
        self.head = f"Host: {host}\r\nAuthorization: Bearer {key}\r\n".encode()
        self.reader = self.writer = None

    async def get(self, path: str) -> int:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        self.writer.write(b"GET " + path.encode() + b" HTTP/1.1\r\n" + self.head + b"\r\n")
        head = await self.reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        if length:
            await self.reader.readexactly(length)
        return int(head[9:12])


async def _poll(host, port, key, job_id, rate, seconds, connections, timeout_s) -> dict:
    """Open loop: poll i is due at begin + i/rate and its latency counts from then (a server
    falling behind shows, no coordinated omission). A poll finds a free keep-alive connection or
    opens one (up to 16 x `connections`); one unanswered after `timeout_s` counts as a timeout,
    with that latency, and its connection is dropped."""
    path = f"/v1/jobs/{job_id}"
    free: collections.deque[RawConnection] = collections.deque()  # FIFO: every connection stays in use
    for _ in range(connections):
        c = RawConnection(host, port, key)
        await c.get(path)  # warm up: connect, authenticate once (the server caches the key)
        free.append(c)
    opened = [connections]
    latencies: list[tuple[int, float]] = []
    spikes: list[tuple[float, float]] = []  # (wall time a poll was due, its latency) for those over 50 ms
    statuses: dict = {}
    begin, wall0 = time.perf_counter(), time.time()
    room = asyncio.Semaphore(16 * connections)

    async def one(i: int) -> None:
        due = begin + i / rate
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        async with room:
            for _attempt in (1, 2):
                reused = bool(free)
                if reused:
                    c = free.popleft()
                else:
                    c = RawConnection(host, port, key)
                    opened[0] += 1
                try:
                    left = max(0.1, due + timeout_s - time.perf_counter())
                    code = await asyncio.wait_for(c.get(path), timeout=left)
                    free.append(c)
                    break
                except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError) as exc:
                    code = "timeout" if isinstance(exc, asyncio.TimeoutError) else type(exc).__name__
                    if c.writer is not None:
                        c.writer.close()
                    # a keep-alive connection the server had just closed: retry once on a new one,
                    # as HTTP clients do (the latency still counts from the due time)
                    if code == "timeout" or not reused:
                        break
        latencies.append((i, (time.perf_counter() - due) * 1000))
        if latencies[-1][1] > 50:
            spikes.append((round(wall0 + (due - begin), 2), round(latencies[-1][1], 1)))
        statuses[str(code)] = statuses.get(str(code), 0) + 1

    await asyncio.gather(*(one(i) for i in range(int(rate * seconds))))
    for c in free:
        if c.writer is not None:
            c.writer.close()
    return {"latencies_ms": [ms for _, ms in sorted(latencies)], "statuses": statuses, "spikes": spikes,
            "seconds": time.perf_counter() - begin,
            "connections_opened": opened[0]}


def _poller_process(host, port, key, job_id, rate, seconds, connections, timeout_s, out) -> None:
    out.put(asyncio.run(_poll(host, port, key, job_id, rate, seconds, connections, timeout_s)))


# ---------------------------------------------------------------- team A: the streams

async def _open_stream(host, port, key, path):
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n"
                 f"Accept: text/event-stream\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    return reader, writer, int(head[9:12]), head


async def _read_body(reader, head: bytes) -> bytes:
    for line in head.split(b"\r\n"):
        if line[:15].lower() == b"content-length:":
            return await reader.readexactly(int(line[15:]))
    return await asyncio.wait_for(reader.read(4096), 5)


async def _streams(host, port, key_a, jobs_a, key_b, job_b, n, sample_every, ready, stop_flag) -> dict:
    stats = {"opened": 0, "open_failed": {}, "events": 0, "delay_ms": [], "closed_early": 0}
    measuring = [False]  # delivery delays count from `ready` on (before it: the streams' catch-up of old events)
    writers = []

    async def hold(reader, sampled: bool) -> None:
        buf = b""
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    stats["closed_early"] += 1
                    return
                stats["events"] += data.count(b"id: ")
                if sampled and measuring[0]:
                    buf += data
                    *lines, buf = buf.split(b"\n")
                    now = time.time()
                    for line in lines:
                        if line.startswith(b"data: {") and b'"t":' in line:
                            try:
                                t = json.loads(line[6:])["data"]["t"]
                                stats["delay_ms"].append((now - t) * 1000)
                            except (ValueError, KeyError, TypeError):
                                pass
        except (OSError, asyncio.CancelledError):
            return

    t0 = time.perf_counter()
    tasks = []
    sem = asyncio.Semaphore(50)  # at most 50 connections being set up at once

    async def open_one(i: int) -> None:
        async with sem:
            try:
                reader, writer, status, _ = await _open_stream(host, port, key_a,
                                                               f"/v1/jobs/{jobs_a[i % len(jobs_a)]}/events")
            except (OSError, asyncio.IncompleteReadError) as exc:
                stats["open_failed"][type(exc).__name__] = stats["open_failed"].get(type(exc).__name__, 0) + 1
                return
            if status != 200:
                stats["open_failed"][str(status)] = stats["open_failed"].get(str(status), 0) + 1
                writer.close()
                return
            stats["opened"] += 1
            writers.append(writer)
            tasks.append(asyncio.ensure_future(hold(reader, i % sample_every == 0)))

    await asyncio.gather(*(open_one(i) for i in range(n)))
    stats["open_seconds"] = time.perf_counter() - t0
    # one more for team A: past the cap
    reader, writer, status, head = await _open_stream(host, port, key_a, f"/v1/jobs/{jobs_a[0]}/events")
    over = {"status": status}
    if status != 200:
        body = await _read_body(reader, head)
        headers = {k.strip().lower(): v.strip() for k, _, v in
                   (line.decode().partition(":") for line in head.split(b"\r\n")[1:] if b":" in line)}
        over["retry_after"] = headers.get("retry-after")
        try:
            over["detail"] = json.loads(body)["detail"]
        except ValueError:
            over["detail"] = body[:300].decode(errors="replace")
    writer.close()
    stats["one_more_for_team_a"] = over
    # and one for team B: the cap is per team
    reader, writer, status, _ = await _open_stream(host, port, key_b, f"/v1/jobs/{job_b}/events")
    stats["one_for_team_b"] = {"status": status}
    writer.close()
    ready.set()
    measuring[0] = True
    events_at_ready = stats["events"]
    while not stop_flag.is_set():
        await asyncio.sleep(0.2)
    stats["events_while_measured"] = stats["events"] - events_at_ready
    for w in writers:
        w.close()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return stats


def _streams_process(host, port, key_a, jobs_a, key_b, job_b, n, sample_every, ready, stop_flag, out) -> None:
    raise_fd_limit()
    out.put(asyncio.run(_streams(host, port, key_a, jobs_a, key_b, job_b, n, sample_every, ready, stop_flag)))


# ---------------------------------------------------------------- PostgreSQL: reads of job_events

def job_events_scans(database_url: str) -> int | None:
    if not database_url.startswith("postgresql"):
        return None
    import psycopg
    from sqlalchemy.engine import make_url

    u = make_url(database_url).set(drivername="postgresql")
    with psycopg.connect(u.render_as_string(hide_password=False), autocommit=True) as c:
        c.execute("SELECT pg_stat_clear_snapshot()")
        row = c.execute("SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_user_tables "
                        "WHERE relname = 'job_events'").fetchone()
    return int(row[0]) if row else None


def redis_slots(broker_url: str, fixture: dict, delete: bool = False) -> int:
    """Stream slots of the bench's teams still held in Redis (api.stream_limit's keys)."""
    import redis

    client = redis.Redis.from_url(broker_url)
    try:
        keys = [f"kernelopt:sse-streams:team:{fixture[t]}" for t in ("team_a", "team_b")]
        n = sum(client.zcard(k) for k in keys)
        if delete:  # fresh databases reuse team ids: leave nothing for the next run
            client.delete(*keys)
        return n
    finally:
        client.close()


def create_database(admin_url: str) -> str:
    import psycopg

    from kernelopt.storage.db import upgrade_database

    name = f"kernelopt_sse_bench_{os.getpid()}"
    with psycopg.connect(admin_url, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    url = admin_url.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1) + "/" + name
    upgrade_database(url)
    return url


def drop_database(admin_url: str, url: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')


# ---------------------------------------------------------------- main

def run(args) -> dict:
    raise_fd_limit()
    load_before = os.getloadavg()
    ctx = multiprocessing.get_context("spawn")
    tmp = Path(tempfile.mkdtemp(prefix="sse-bench-"))
    tmp.chmod(0o711)  # jobs run as their own uids: the serve refuses a data directory they cannot traverse
    data_dir = tmp / "data"
    database_url = args.database_url
    created_db = None
    if args.postgres and not database_url:
        database_url = created_db = create_database(args.postgres)
    args.embedded = args.url is None and database_url is None
    if args.embedded:
        from kernelopt.storage.db import upgrade_database

        database_url = f"sqlite:///{(data_dir / 'kernelopt.db').resolve()}"
        upgrade_database(database_url)
    elif database_url.startswith("postgresql") and args.url is None:
        from kernelopt.storage.db import upgrade_database

        upgrade_database(database_url)
    fixture = setup_fixture(database_url, data_dir, args.jobs_a)
    cap = args.cap or args.streams
    server = None
    log = open(tmp / "server.log", "w+")
    stop = ctx.Event()
    writer = None
    counter = ctx.Value("i", 0)
    go_file, count_file = tmp / "go", tmp / "count"
    result: dict = {}
    try:
        if args.url is None:
            port = free_port()
            env = {**os.environ, "KERNELOPT_DATA_DIR": str(data_dir), "KERNELOPT_DATABASE_URL": database_url,
                   "KERNELOPT_MAX_SSE_STREAMS_PER_TEAM": str(cap),
                   "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
            env.pop("KERNELOPT_BROKER_URL", None)
            if args.broker_url:
                env["KERNELOPT_BROKER_URL"] = args.broker_url
            if args.embedded:
                env.pop("KERNELOPT_DATABASE_URL")
                env.update(SSE_BENCH_REPO=str(REPO), SSE_BENCH_JOBS=",".join(fixture["jobs_a"]),
                           SSE_BENCH_GO=str(go_file), SSE_BENCH_COUNT=str(count_file),
                           SSE_BENCH_RATE=str(args.event_rate), SSE_BENCH_PORT=str(port))
            server = start_server(args, env, port, log)
            url = f"http://127.0.0.1:{port}"
        else:
            url = args.url.rstrip("/")
        host, port = url.split("://", 1)[1].split(":")[0], int(url.rsplit(":", 1)[1])
        # the events, in every phase
        if args.embedded:
            go_file.touch()
        else:
            writer = ctx.Process(target=_writer_process, daemon=True,
                                 args=(database_url, fixture["jobs_a"], args.event_rate, stop, counter))
            writer.start()

        def written() -> int:
            if args.embedded:
                return int(count_file.read_text() or 0) if count_file.exists() else 0
            return counter.value

        def poll_phase(seconds: float) -> dict:
            out = ctx.Queue()
            p = ctx.Process(target=_poller_process, args=(host, port, fixture["key_b"], fixture["jobs_b"][0],
                                                          args.poll_rate, seconds, args.poll_connections,
                                                          args.poll_timeout, out))
            scans0, cpu0, w0, t0 = job_events_scans(database_url), cpu_seconds(server.pid) if server else None, \
                written(), time.perf_counter()
            busy0 = machine_busy()
            p.start()
            got = out.get(timeout=seconds + args.poll_timeout + 120)
            p.join()
            elapsed = time.perf_counter() - t0
            scans1, cpu1 = job_events_scans(database_url), cpu_seconds(server.pid) if server else None
            busy1 = machine_busy()
            lat = got["latencies_ms"]
            phase = {"polls": summary(lat), "poll_rate": args.poll_rate, "statuses": got["statuses"],
                     "seconds": round(elapsed, 2), "events_written": written() - w0,
                     # all processes of the machine (server, clients, PostgreSQL, anything else running)
                     "machine_cpu_busy_pct": round(100 * (busy1[0] - busy0[0]) / max(1, busy1[1] - busy0[1]), 1),
                     "latencies_ms_in_due_order": [round(x, 1) for x in lat], "slow_polls_at": got["spikes"]}
            if cpu0 is not None:
                phase["server_cpu_pct"] = round(100 * (cpu1 - cpu0) / elapsed, 1)
            if scans0 is not None:
                phase["job_events_scans_per_s"] = round((scans1 - scans0) / elapsed, 1)
            return phase

        time.sleep(args.settle)  # the server's own start-up work (the embedded dispatcher's device probe)
        poll_phase(2.0)  # warm-up, not reported
        result["baseline"] = poll_phase(args.baseline)
        # open the streams
        ready, stop_streams, out = ctx.Event(), ctx.Event(), ctx.Queue()
        holder = ctx.Process(target=_streams_process, args=(host, port, fixture["key_a"], fixture["jobs_a"],
                                                            fixture["key_b"], fixture["jobs_b"][0], args.streams,
                                                            args.sample_every, ready, stop_streams, out))
        holder.start()
        if not ready.wait(args.open_timeout):
            raise RuntimeError(f"the streams did not open within {args.open_timeout} s")
        w_streams = written()
        time.sleep(args.settle)
        result["with_streams"] = poll_phase(args.duration)
        w_end = written()
        stop_streams.set()
        streams = out.get(timeout=60)
        holder.join(10)
        delays = streams.pop("delay_ms")
        streams["delivery_delay"] = summary(delays)
        streams["events_written_while_measured"] = w_end - w_streams
        # every event goes to every stream of its job: streams / jobs of them
        streams["expected_deliveries_while_measured"] = round((w_end - w_streams) * streams["opened"] / args.jobs_a)
        result["streams"] = streams
        if args.broker_url:
            time.sleep(3.0)
            streams["redis_slots_3s_after_the_streams_closed"] = redis_slots(args.broker_url, fixture)
    finally:
        stop.set()
        go_file.unlink(missing_ok=True)
        if writer is not None:
            writer.join(10)
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
        log.seek(0)
        tail = log.read()[-3000:]
        log.close()
        if args.broker_url and "streams" in result:
            result["streams"]["redis_slots_after_the_server_stopped"] = redis_slots(args.broker_url, fixture, True)
        if created_db:
            drop_database(args.postgres, created_db)
    result["server_log_tail"] = tail
    result["config"] = {
        "url": args.url or "started here", "database": "PostgreSQL" if database_url.startswith("postgresql") else
        "SQLite (embedded)", "broker": bool(args.broker_url), "streams": args.streams, "cap": cap,
        "jobs_a": args.jobs_a, "event_rate": args.event_rate, "poll_rate": args.poll_rate,
        "duration_s": args.duration, "baseline_s": args.baseline, "repo": str(REPO),
        "machine": f"{platform.node()}: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, "
                   f"{_cpu_model()}, Python {platform.python_version()}",
        "command": " ".join(["python", "benchmarks/sse_fanout.py", *sys.argv[1:]]),
        "load_average_1m_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    return result


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def report(result: dict, target_p99_ms: float) -> str:
    c = result["config"]
    head = (f"{c['streams']} streams (cap {c['cap']}) over {c['jobs_a']} jobs of team A, {c['event_rate']:g} events/s, "
            f"team B polls at {c['poll_rate']:g}/s; {c['database']}{' + Redis' if c['broker'] else ''}; "
            f"code from {c['repo']}; load average {c['load_average_1m_before_after']}")
    lines = [head]
    for name in ("baseline", "with_streams"):
        ph = result[name]
        p = ph["polls"]
        extra = "".join([f", server CPU {ph['server_cpu_pct']}%" if "server_cpu_pct" in ph else "",
                         f", machine CPU {ph['machine_cpu_busy_pct']}% busy",
                         f", job_events scans {ph['job_events_scans_per_s']}/s" if "job_events_scans_per_s" in ph
                         else ""])
        lines.append(f"  team B {name:<13} {p['count']:>5} polls  p50 {p['p50_ms']:7.2f} ms  p90 {p['p90_ms']:7.2f} ms"
                     f"  p99 {p['p99_ms']:7.2f} ms  max {p['max_ms']:8.2f} ms  {ph['statuses']}{extra}")
    s = result["streams"]
    d = s["delivery_delay"]
    lines.append(f"  streams: {s['opened']} opened in {s['open_seconds']:.1f} s, refused {s['open_failed'] or 'none'}, "
                 f"closed early {s['closed_early']}")
    lines.append(f"  one more for team A: {s['one_more_for_team_a']}")
    lines.append(f"  one for team B: {s['one_for_team_b']}")
    lines.append(f"  events delivered while measured: {s['events_while_measured']} "
                 f"(expected {s['expected_deliveries_while_measured']}); delivery delay p50 {d['p50_ms']:.1f} ms, "
                 f"p99 {d['p99_ms']:.1f} ms, max {d['max_ms']:.1f} ms ({d['count']} sampled)")
    met = result["with_streams"]["polls"]["p99_ms"] < target_p99_ms
    lines.append(f"  target: team B p99 < {target_p99_ms:g} ms with the streams open: {'MET' if met else 'MISSED'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", help="a running server (needs --database-url: its database)")
    p.add_argument("--database-url", help="the server's database (PostgreSQL); default: embedded SQLite")
    p.add_argument("--postgres", help="an admin URL: create a fresh database there for the run, drop it after")
    p.add_argument("--broker-url", help="Redis for the started server (the stream cap is then counted in Redis)")
    p.add_argument("--repo", help="serve the code of another checkout (before/after comparisons)")
    p.add_argument("--python", help="the Python that runs the server (default: this one)")
    p.add_argument("--streams", type=int, default=1000)
    p.add_argument("--cap", type=int, default=0, help="KERNELOPT_MAX_SSE_STREAMS_PER_TEAM for the started server "
                                                      "(default: --streams, so the next stream shows the 429)")
    p.add_argument("--jobs-a", type=int, default=10, help="team A's jobs the streams are spread over")
    p.add_argument("--event-rate", type=float, default=10.0, help="events/s written to team A's jobs, in all")
    p.add_argument("--poll-rate", type=float, default=50.0, help="team B's polls/s (open loop)")
    p.add_argument("--poll-connections", type=int, default=4, help="keep-alive connections (more open on demand)")
    p.add_argument("--poll-timeout", type=float, default=10.0, help="a poll unanswered this long is a timeout")
    p.add_argument("--duration", type=float, default=30.0, help="seconds of polling with the streams open")
    p.add_argument("--baseline", type=float, default=10.0, help="seconds of polling before any stream opens")
    p.add_argument("--settle", type=float, default=5.0,
                   help="seconds after the server starts, and after the streams open, before polls are measured")
    p.add_argument("--open-timeout", type=float, default=300.0)
    p.add_argument("--sample-every", type=int, default=20, help="every n-th stream measures the delivery delay")
    p.add_argument("--target-p99-ms", type=float, default=50.0)
    p.add_argument("--json", metavar="FILE", help="write the full result as JSON")
    p.add_argument("--serve-embedded-child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve_embedded_child:
        serve_embedded_child()
        return 0
    if args.repo and os.environ.get("SSE_BENCH_REPO") != str(Path(args.repo).resolve()):
        # start again with the other checkout first on sys.path (its service code writes the fixture)
        os.environ["SSE_BENCH_REPO"] = str(Path(args.repo).resolve())
        os.execv(sys.executable, [sys.executable, str(Path(__file__).resolve()), *(argv or sys.argv[1:])])
    if args.url and not args.database_url:
        p.error("--url needs --database-url (to create the teams and jobs and write the events)")
    result = run(args)
    print(report(result, args.target_p99_ms))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, default=str) + "\n")
    return 0 if result["with_streams"]["polls"]["p99_ms"] < args.target_p99_ms else 1


if __name__ == "__main__":
    sys.exit(main())
