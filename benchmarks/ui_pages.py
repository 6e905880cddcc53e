"""Page-load benchmark of the dashboard (issue 11): p50/p95 of each /ui page, served over real HTTP
by uvicorn, with N jobs of the signed-in team in the database (and as many of another team).

    python benchmarks/ui_pages.py                        # 1,000 jobs, embedded SQLite in a temp dir
    python benchmarks/ui_pages.py --database-url postgresql+psycopg://postgres@127.0.0.1:5432/kernelopt_ui

Jobs are inserted straight into the database (finished ones with results and a report.json each,
distinct blobs shaped like tests/testdata/ui/report.json, a third of them recording LLM usage, which
their rows carry as the worker copies it; the job measured also has the trajectory and a diff), a key
is created, and each page is fetched --requests times after a warm-up, one request at a time. The
overview's first load (the app's first queries) is timed apart as "cold". Exits 1 if a page's
p95 is over --target-ms (200). --out writes the table as JSON too.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import threading
import time
from datetime import timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

UI_DATA = REPO / "tests" / "testdata" / "ui"
DIFF = b"--- inductor\n+++ accepted\n@@ -1,3 +1,3 @@\n-    XBLOCK = 64\n+    XBLOCK = 256\n" + b" context line\n" * 200


class NoDispatcher:
    def enqueue(self, job_id: str) -> None:
        pass


def seed(settings, n: int) -> tuple[str, str]:
    """Returns (key of the measured team, id of a job with a diff)."""
    import hashlib

    from kernelopt.service.auth import create_api_key, create_team
    from kernelopt.service.strategy_memory import usage_from_report
    from kernelopt.storage.blobs import BlobStore
    from kernelopt.storage.db import make_engine, make_sessionmaker, upgrade_database
    from kernelopt.storage.models import Artifact, Job, utcnow

    url = settings.effective_database_url
    upgrade_database(url)
    engine = make_engine(url)
    blobs = BlobStore(settings.blobs_dir)
    rng = random.Random(42)
    input_sha = blobs.put_bytes(b"# problem\n")
    diff_sha = blobs.put_bytes(DIFF)
    report_md_sha = blobs.put_bytes(b"# report\n")
    template = json.loads((UI_DATA / "report.json").read_text())
    traj = (UI_DATA / "trajectory.jsonl").read_bytes()
    traj_sha = blobs.put_bytes(traj)
    now = utcnow()
    with make_sessionmaker(engine)() as s:
        teams = [create_team(s, f"ui-bench-{i}-{time.time_ns()}") for i in range(2)]
        key = create_api_key(s, teams[0].id)
        target = None
        for t in teams:
            rows, reports = [], []
            for i in range(n):
                status = rng.choice(["succeeded"] * 8 + ["failed", "cancelled"])
                outcome = rng.choice(["optimized", "matched", "fallback"]) if status == "succeeded" else None
                speedup = round(rng.uniform(1.03, 2.0), 3) if outcome == "optimized" else (
                    1.0 if outcome else None)
                cause = rng.choice(["no-faster-candidate: x", "too-small-share: y", "near-optimal: z"]) \
                    if outcome == "fallback" else None
                precision = rng.choice(["strict", "strict", "tf32"])
                result = {"outcome": outcome, "speedup": speedup, "timing": "measured", "baseline_ms": 1.0,
                          "precision": precision, "stage_seconds": {"load": 1.0, "compile": 10.0, "search": 120.0,
                                                                    "verify": 15.0}} if outcome else None
                rows.append(Job(team_id=t.id, status=status, outcome=outcome, speedup=speedup, cause=cause,
                                options={"precision": precision}, filename=f"model_{i}.py",
                                problem_sha256=hashlib.sha256(str(i).encode()).hexdigest(), input_blob=input_sha,
                                tag=rng.choice(["vision", "nlp", "kernels", None]), request_hash="0" * 64,
                                created_at=now - timedelta(minutes=7 * i), finished_at=now, result=result,
                                gpu_seconds=rng.uniform(30, 600) if outcome else 0.0, progress=1.0))
                if outcome:  # a report.json of its own (distinct content: no shared cache entry)
                    report = {**template, "problem": {"path": f"/p/model_{i}.py", "name": f"{t.id}-model_{i}"},
                              "result": {**template["result"], **result}}
                    if i % 3:
                        report.pop("llm")
                    else:  # the worker copies a job's LLM usage into its row (service.strategy_memory.record_job)
                        for column, value in usage_from_report(report).items():
                            setattr(rows[-1], column, value)
                    data = json.dumps(report, indent=1).encode()
                    reports.append((len(rows) - 1, blobs.put_bytes(data), len(data)))
            s.add_all(rows)
            s.flush()
            for idx, sha, size in reports:
                s.add(Artifact(job_id=rows[idx].id, name="report.json", blob_sha256=sha, size=size,
                               content_type="application/json"))
            if target is None:
                target = next(r for r in rows if r.status == "succeeded")
                target.outcome, target.speedup = "optimized", 1.7316
                target.result = {**template["result"], "stage_seconds": template["result"]["stage_seconds"]}
                for name, sha, size in (("diff__kernelopt_group_1.diff", diff_sha, len(DIFF)),
                                        ("report.md", report_md_sha, 9), ("trajectory.jsonl", traj_sha, len(traj))):
                    s.add(Artifact(job_id=target.id, name=name, blob_sha256=sha, size=size, content_type="text/plain"))
        s.commit()
        target_id = target.id
    engine.dispose()
    return key, target_id


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=1000)
    p.add_argument("--requests", type=int, default=100)
    p.add_argument("--database-url", default=None)
    p.add_argument("--target-ms", type=float, default=200.0)
    p.add_argument("--out", default=None, help="also write the results as JSON here")
    a = p.parse_args(argv)

    import httpx
    import uvicorn

    from kernelopt.api.app import create_app
    from kernelopt.service.settings import Settings
    from tests.service.api.conftest import free_port

    data = Path(tempfile.mkdtemp(prefix="kernelopt-ui-bench-"))
    settings = Settings(data_dir=data, database_url=a.database_url, broker_url=None)
    t0 = time.perf_counter()
    key, job_id = seed(settings, a.jobs)
    print(f"seeded {a.jobs} jobs for each of 2 teams in {time.perf_counter() - t0:.1f} s "
          f"({'SQLite' if a.database_url is None else 'PostgreSQL'})")
    app = create_app(settings, NoDispatcher())
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    base = f"http://127.0.0.1:{port}"
    failed = False
    try:
        with httpx.Client(base_url=base) as c:
            r = c.post("/ui/login", data={"api_key": key})
            assert r.status_code == 303, r.text
            t = time.perf_counter()
            first = c.get("/ui/").text  # the first request: the app's first queries
            cold_ms = (time.perf_counter() - t) * 1000
            assert f'id="total-jobs">{a.jobs}<' in first and 'id="chart-speedups"' in first
            assert 'id="llm-tokens">none recorded<' not in first  # the jobs' LLM usage was counted
            print(f"overview, first load: {cold_ms:.1f} ms")
            assert c.get("/ui/jobs").text.count("<tr data-job=") == 50  # a full page of the team's jobs
            job_html = c.get(f"/ui/jobs/{job_id}").text
            assert 'id="kernels"' in job_html and "deployed: passed Gates 1–4" in job_html
            pages = {"overview": "/ui/", "jobs": "/ui/jobs", "jobs?status=succeeded&tag=nlp":
                     "/ui/jobs?status=succeeded&tag=nlp", "job (with diff)": f"/ui/jobs/{job_id}",
                     "submit": "/ui/submit", "live (poll)": f"/ui/live?ids={job_id}"}
            results = {}
            print(f"{'page':34s} {'p50 ms':>8s} {'p95 ms':>8s} {'max ms':>8s}")
            for name, path in pages.items():
                for _ in range(5):
                    assert c.get(path).status_code == 200, path
                times = []
                for _ in range(a.requests):
                    t = time.perf_counter()
                    r = c.get(path)
                    r.read()
                    times.append((time.perf_counter() - t) * 1000)
                    assert r.status_code == 200, (path, r.status_code)
                times.sort()
                p95 = times[int(0.95 * (len(times) - 1))]
                failed |= p95 > a.target_ms
                print(f"{name:34s} {statistics.median(times):8.1f} {p95:8.1f} {times[-1]:8.1f}")
                results[name] = {"p50_ms": round(statistics.median(times), 1), "p95_ms": round(p95, 1),
                                 "max_ms": round(times[-1], 1)}
    finally:
        server.should_exit = True
        thread.join(5)
    print(f"target p95 < {a.target_ms:.0f} ms: {'missed' if failed else 'met'}")
    if a.out:
        Path(a.out).write_text(json.dumps({
            "database": "SQLite" if a.database_url is None else "PostgreSQL", "jobs_per_team": a.jobs,
            "requests_per_page": a.requests, "target_p95_ms": a.target_ms, "met": not failed,
            "overview_cold_ms": round(cold_ms, 1), "pages": results,
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        }, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
