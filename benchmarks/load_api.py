"""Load benchmark of the API (a script, not a test): concurrent clients polling job status,
plus a trickle of submissions (each cancelled right away so the team's queue never fills),
against a running server on loopback. Reports throughput and p50/p90/p99 latency.

    # a server on PostgreSQL (2 uvicorn workers; more than one worker needs the broker configured)
    export KERNELOPT_DATABASE_URL=postgresql+psycopg://postgres@127.0.0.1:5432/kernelopt
    KERNELOPT_BROKER_URL=redis://127.0.0.1:6379/0 kernelopt serve --workers 2 --migrate &
    # a fresh team and key straight in that database, then 20 s of load: 500 polls/s offered by
    # 16 httpx clients in 2 processes, + 2 submissions/s
    python benchmarks/load_api.py --create-team --url http://127.0.0.1:8000
    # closed loop (each client polls again as soon as it is answered): the saturation throughput
    python benchmarks/load_api.py --create-team --rate 0 --clients 8

Open loop (the default): poll i is due at start + i/rate and its latency counts from that due
time, so a server (or client) falling behind shows in the percentiles (no coordinated omission).
On a 2-core machine the load generator shares the CPU with the server: httpx costs ~1 ms of CPU
per request, so one client process saturates its own event loop near 500/s; --procs spreads the
clients over processes, and --client raw uses a minimal HTTP/1.1 client to measure the server alone.

Target (issue 3): >= 500 polls/s at p99 < 50 ms on a 2-core machine with PostgreSQL.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import statistics
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
KERNEL = REPO / "benchmarks" / "kernels" / "add_relu_kernel.py"


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q / 100 * (len(s) - 1)))))]


def summary(name: str, latencies: list[float], seconds: float) -> dict:
    ms = [x * 1000 for x in latencies]
    return {"op": name, "count": len(ms), "per_s": len(ms) / seconds if seconds else 0.0,
            "p50_ms": percentile(ms, 50), "p90_ms": percentile(ms, 90), "p99_ms": percentile(ms, 99),
            "max_ms": max(ms) if ms else float("nan"), "mean_ms": statistics.fmean(ms) if ms else float("nan")}


def create_team_key(database_url: str) -> str:
    sys.path.insert(0, str(REPO))
    from kernelopt.service.auth import create_api_key, create_team
    from kernelopt.storage.db import make_engine, make_sessionmaker

    engine = make_engine(database_url)
    try:
        with make_sessionmaker(engine)() as s:
            team = create_team(s, f"load-{uuid.uuid4().hex[:8]}")
            return create_api_key(s, team.id)
    finally:
        engine.dispose()


class RawHttpConnection:
    """A minimal HTTP/1.1 keep-alive GET client on asyncio streams (for `--client raw`).

    Real sockets and real HTTP, one connection per simulated client, a few tens of microseconds
    of CPU per request: on a shared 2-core machine the numbers are then the server's.
    """

    def __init__(self, url: str, key: str):
        u = httpx.URL(url)
        self.host, self.port = u.host, u.port or 80
        self.head = f"Authorization: Bearer {key}\r\nHost: {self.host}\r\n".encode()
        self.reader = self.writer = None

    async def get(self, path: str) -> int:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        self.writer.write(b"GET " + path.encode() + b" HTTP/1.1\r\n" + self.head + b"\r\n")
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        if length:
            await self.reader.readexactly(length)
        if b"connection: close" in head.lower():
            self.writer.close()
            self.reader = self.writer = None
        return status


def setup_jobs(args) -> list[str]:
    """Jobs to poll, cancelled at once so that no worker runs them during the measurement."""
    source = KERNEL.read_bytes()
    ids = []
    with httpx.Client(base_url=args.url, headers={"Authorization": f"Bearer {args.key}"}, timeout=30) as c:
        for i in range(args.jobs):
            r = c.post("/v1/jobs", files={"file": (KERNEL.name, source + f"\n# {uuid.uuid4()} {i}\n".encode())},
                       data={"tag": "load", "options": "{}"})
            r.raise_for_status()
            ids.append(r.json()["id"])
            c.post(f"/v1/jobs/{ids[-1]}/cancel")
    return ids


async def load_part(args, ids: list[str], part: int, parts: int, start_wall: float) -> dict:
    """One process's share: clients/parts pollers at rate/parts (+ the submitter in part 0)."""
    clients = max(1, args.clients // parts + (1 if part < args.clients % parts else 0))
    rate = args.rate / parts if args.rate else 0.0
    headers = {"Authorization": f"Bearer {args.key}"}
    limits = httpx.Limits(max_connections=clients + 4, max_keepalive_connections=clients + 4)
    source = KERNEL.read_bytes()
    poll_lat: list[float] = []
    submit_lat: list[float] = []
    statuses: Counter = Counter()
    async with httpx.AsyncClient(base_url=args.url, headers=headers, limits=limits, timeout=30) as client:
        await asyncio.gather(*(client.get(f"/v1/jobs/{ids[i % len(ids)]}") for i in range(clients * 4)))  # warm up
        await asyncio.sleep(max(0.0, start_wall - time.time()))
        begin = time.perf_counter()
        stop_at = begin + args.duration
        offset = part / args.rate if args.rate else 0.0  # parts interleave their schedules
        schedule = {"next": 0}

        async def poller(seed: int) -> None:
            rnd = random.Random(seed)
            raw = RawHttpConnection(args.url, args.key) if args.client == "raw" else None
            while time.perf_counter() < stop_at:
                job_id = rnd.choice(ids)
                if rate:
                    due = begin + offset + schedule["next"] / rate
                    schedule["next"] += 1
                    if due >= stop_at:
                        break
                    delay = due - time.perf_counter()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    t0 = due
                else:
                    t0 = time.perf_counter()
                try:
                    if raw is not None:
                        code = await raw.get(f"/v1/jobs/{job_id}")
                    else:
                        code = (await client.get(f"/v1/jobs/{job_id}")).status_code
                except (httpx.HTTPError, OSError, asyncio.IncompleteReadError) as exc:
                    code = type(exc).__name__
                    raw = RawHttpConnection(args.url, args.key) if raw is not None else None
                poll_lat.append(time.perf_counter() - t0)
                statuses[f"poll {code}"] += 1

        async def submitter() -> None:
            interval = 1.0 / args.submit_rate
            next_at = time.perf_counter()
            n = 0
            while time.perf_counter() < stop_at:
                n += 1
                t0 = time.perf_counter()
                try:
                    content = source + f"\n# s{n} {uuid.uuid4()}\n".encode()
                    r = await client.post("/v1/jobs", files={"file": (KERNEL.name, content)},
                                          data={"tag": "load-submit", "options": '{"time_budget_s": 60}'},
                                          headers={"Idempotency-Key": uuid.uuid4().hex})
                    code = r.status_code
                    if code in (200, 202):
                        await client.post(f"/v1/jobs/{r.json()['id']}/cancel")
                except httpx.HTTPError as exc:
                    code = type(exc).__name__
                submit_lat.append(time.perf_counter() - t0)
                statuses[f"submit {code}"] += 1
                next_at += interval
                await asyncio.sleep(max(0.0, next_at - time.perf_counter()))

        tasks = [poller(part * 1000 + i) for i in range(clients)]
        if part == 0 and args.submit_rate > 0:
            tasks.append(submitter())
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - begin
    return {"poll_lat": poll_lat, "submit_lat": submit_lat, "statuses": dict(statuses), "elapsed": elapsed}


def _run_part(args, ids, part, parts, start_wall) -> dict:
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    return asyncio.run(load_part(args, ids, part, parts, start_wall))


def run(args) -> dict:
    ids = setup_jobs(args)
    start_wall = time.time() + 2.0 + 0.5 * args.procs  # every process warmed up and waiting
    jobs = [(args, ids, part, args.procs, start_wall) for part in range(args.procs)]
    if args.procs == 1:
        parts = [_run_part(*jobs[0])]
    else:
        with multiprocessing.get_context("spawn").Pool(args.procs) as pool:
            parts = pool.starmap(_run_part, jobs)
    poll_lat = [x for p in parts for x in p["poll_lat"]]
    submit_lat = [x for p in parts for x in p["submit_lat"]]
    statuses: Counter = Counter()
    for p in parts:
        statuses.update(p["statuses"])
    elapsed = max(p["elapsed"] for p in parts)
    return {"url": args.url, "clients": args.clients, "procs": args.procs, "client": args.client,
            "offered_rate": args.rate or None, "duration_s": round(elapsed, 2), "jobs_polled": len(ids),
            "submit_rate_per_s": args.submit_rate,
            # open loop: the polls due in the window, over the window
            "polls": summary("poll", poll_lat, args.duration if args.rate else elapsed),
            "submissions": summary("submit+cancel", submit_lat, elapsed), "statuses": dict(statuses)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", default=os.environ.get("KERNELOPT_URL", "http://127.0.0.1:8000"))
    p.add_argument("--key", default=os.environ.get("KERNELOPT_API_KEY"))
    p.add_argument("--create-team", action="store_true",
                   help="create a fresh team and key directly in $KERNELOPT_DATABASE_URL (the server's database)")
    p.add_argument("--clients", type=int, default=16, help="concurrent polling clients (connections), in all")
    p.add_argument("--procs", type=int, default=2, help="client processes the clients are spread over")
    p.add_argument("--rate", type=float, default=500.0,
                   help="open loop: polls/s offered in all (default 500, the target); 0 = closed loop, each "
                        "client polls again as soon as it has its answer (the saturation throughput)")
    p.add_argument("--duration", type=float, default=20.0, help="seconds of load")
    p.add_argument("--client", choices=["httpx", "raw"], default="httpx",
                   help="HTTP client of the polls: httpx (default) or a minimal asyncio-streams HTTP/1.1 client "
                        "that leaves the shared CPU to the server (submissions always use httpx)")
    p.add_argument("--jobs", type=int, default=20, help="jobs to create and poll")
    p.add_argument("--submit-rate", type=float, default=2.0, help="submissions per second alongside the polls")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--target-rps", type=float, default=500.0)
    p.add_argument("--target-p99-ms", type=float, default=50.0)
    args = p.parse_args(argv)
    if args.create_team:
        db = os.environ.get("KERNELOPT_DATABASE_URL")
        if not db:
            p.error("--create-team needs KERNELOPT_DATABASE_URL")
        args.key = create_team_key(db)
    if not args.key:
        p.error("give --key, KERNELOPT_API_KEY, or --create-team")
    args.procs = max(1, min(args.procs, args.clients))
    result = run(args)
    polls = result["polls"]
    errors = sum(n for k, n in result["statuses"].items() if k.startswith("poll ") and k != "poll 200")
    result["poll_errors"] = errors
    result["target_met"] = polls["per_s"] >= args.target_rps and polls["p99_ms"] < args.target_p99_ms and not errors
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        mode = f"open loop at {args.rate:g} polls/s" if args.rate else "closed loop"
        print(f"{args.clients} {args.client} clients in {args.procs} process(es), {mode}, {result['duration_s']} s, "
              f"{result['jobs_polled']} jobs, submissions at {args.submit_rate:g}/s, against {args.url}")
        for s in (result["polls"], result["submissions"]):
            print(f"  {s['op']:<14} {s['count']:>7} requests  {s['per_s']:8.1f}/s  p50 {s['p50_ms']:6.2f} ms  "
                  f"p90 {s['p90_ms']:6.2f} ms  p99 {s['p99_ms']:6.2f} ms  max {s['max_ms']:7.2f} ms")
        print(f"  statuses: {result['statuses']}")
        print(f"  target >= {args.target_rps:g} polls/s at p99 < {args.target_p99_ms:g} ms: "
              f"{'MET' if result['target_met'] else 'MISSED'}")
    return 0 if result["target_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
