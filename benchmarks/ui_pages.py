"""Page-load benchmark of the dashboard (issue 11): p50/p95 of each /ui page, served over real HTTP
by uvicorn, with N jobs of the signed-in team in the database (and as many of another team).

    python benchmarks/ui_pages.py                        # 1,000 jobs, embedded SQLite in a temp dir
    python benchmarks/ui_pages.py --database-url postgresql+psycopg://postgres@127.0.0.1:5432/kernelopt_ui

Jobs are inserted straight into the database (finished ones with results, artifacts' rows and
diffs on the job measured), a key is created, and each page is fetched --requests times after a
warm-up, one request at a time. Exits 1 if a page's p95 is over --target-ms (200).
"""
from __future__ import annotations

import argparse
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

DIFF = b"--- inductor\n+++ accepted\n@@ -1,3 +1,3 @@\n-    XBLOCK = 64\n+    XBLOCK = 256\n" + b" context line\n" * 200


class NoDispatcher:
    def enqueue(self, job_id: str) -> None:
        pass


def seed(settings, n: int) -> tuple[str, str]:
    """Returns (key of the measured team, id of a job with a diff)."""
    import hashlib

    from kernelopt.service.auth import create_api_key, create_team
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
    report_sha = blobs.put_bytes(b"# report\n")
    now = utcnow()
    with make_sessionmaker(engine)() as s:
        teams = [create_team(s, f"ui-bench-{i}-{time.time_ns()}") for i in range(2)]
        key = create_api_key(s, teams[0].id)
        target = None
        for t in teams:
            rows = []
            for i in range(n):
                status = rng.choice(["succeeded"] * 8 + ["failed", "cancelled"])
                outcome = rng.choice(["optimized", "matched", "fallback"]) if status == "succeeded" else None
                speedup = round(rng.uniform(1.03, 2.0), 3) if outcome == "optimized" else (
                    1.0 if outcome else None)
                cause = rng.choice(["no-faster-candidate: x", "too-small-share: y", "near-optimal: z"]) \
                    if outcome == "fallback" else None
                result = {"outcome": outcome, "speedup": speedup, "timing": "measured", "baseline_ms": 1.0,
                          "precision": "strict", "stage_seconds": {"load": 1.0, "compile": 10.0, "search": 120.0,
                                                                   "verify": 15.0}} if outcome else None
                rows.append(Job(team_id=t.id, status=status, outcome=outcome, speedup=speedup, cause=cause,
                                options={"precision": "strict"}, filename=f"model_{i}.py",
                                problem_sha256=hashlib.sha256(str(i).encode()).hexdigest(), input_blob=input_sha,
                                tag=rng.choice(["vision", "nlp", "kernels", None]), request_hash="0" * 64,
                                created_at=now - timedelta(minutes=i), finished_at=now, result=result,
                                gpu_seconds=rng.uniform(30, 600) if outcome else 0.0, progress=1.0))
            s.add_all(rows)
            s.flush()
            if target is None:
                target = rows[0]
                target.status, target.outcome, target.speedup = "succeeded", "optimized", 1.4
                target.result = {"outcome": "optimized", "speedup": 1.4, "timing": "measured",
                                 "stage_seconds": {"load": 1.0, "search": 100.0}}
                for name, sha, size in (("diff_k0.diff", diff_sha, len(DIFF)), ("report.md", report_sha, 9)):
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
            assert c.get("/ui/jobs").text.count("<tr data-job=") == 50  # a full page of the team's jobs
            assert f"{a.jobs} jobs" in " ".join(c.get("/ui/").text.replace(">", "> ").split()) or \
                f'id="total-jobs">{a.jobs}<' in c.get("/ui/").text
            pages = {"overview": "/ui/", "jobs": "/ui/jobs", "jobs?status=succeeded&tag=nlp":
                     "/ui/jobs?status=succeeded&tag=nlp", "job (with diff)": f"/ui/jobs/{job_id}",
                     "submit": "/ui/submit", "live (poll)": f"/ui/live?ids={job_id}"}
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
    finally:
        server.should_exit = True
        thread.join(5)
    print(f"target p95 < {a.target_ms:.0f} ms: {'missed' if failed else 'met'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
