"""team_stats on a hand-built set of jobs."""
from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import update

from service import job_queries
from storage.models import Job

from .test_jobs import submit


@pytest.fixture
def built(session, team_key, blobs, settings):
    """Ten jobs with known outcomes, speedups, GPU time, tags and creation times."""
    tid = team_key.team.id
    spec = [  # status, outcome, speedup, gpu_seconds, tag
        ("succeeded", "optimized", 2.0, 3600.0, "a"),
        ("succeeded", "optimized", 8.0, 1800.0, "a"),
        ("succeeded", "matched", 0.97, 600.0, "b"),   # not solved: deploys the baseline (1.0)
        ("succeeded", "fallback", None, 300.0, "b"),
        ("failed", "failed", None, 10.0, "a"),
        ("crashed", None, None, 90.0, None),
        ("cancelled", None, None, 0.0, None),           # withdrawn: not "finished"
        ("queued", None, None, 0.0, "a"),
        ("running", None, None, 0.0, None),
        ("succeeded", "optimized", 4.0, 7200.0, "old"),  # created long ago
    ]
    ids = []
    for i, (status, outcome, speedup, gpu, tag) in enumerate(spec):
        job, _ = submit(session, tid, blobs, settings, data=b"stats%d" % i, tag=tag)
        session.execute(update(Job).where(Job.id == job.id).values(
            status=status, outcome=outcome, speedup=speedup, gpu_seconds=gpu))
        ids.append(job.id)
    session.execute(update(Job).where(Job.id == ids[-1])
                    .values(created_at=datetime(2020, 1, 1, tzinfo=timezone.utc)))
    session.commit()
    return tid


def test_stats_counts_geomeans_and_gpu_hours(session, built):
    s = job_queries.team_stats(session, built)
    assert s["total"] == 10
    assert s["by_status"] == {"queued": 1, "running": 1, "succeeded": 5, "failed": 1, "cancelled": 1, "crashed": 1}
    assert s["outcomes"] == {"optimized": 3, "matched": 1, "fallback": 1, "failed": 1, "crashed": 1, "cancelled": 1}
    assert s["finished"] == 7
    # Deployed speedups over finished jobs: 2, 8, 4 and four unsolved at 1.0.
    assert s["geomean_speedup"] == pytest.approx((2 * 8 * 4) ** (1 / 7))
    assert s["geomean_speedup_optimized"] == pytest.approx(4.0)  # (2*8*4)^(1/3)
    assert s["gpu_seconds"] == pytest.approx(13600.0) and s["gpu_hours"] == pytest.approx(13600 / 3600)


def test_stats_time_range_and_tag(session, built):
    recent = job_queries.team_stats(session, built, since=datetime(2024, 1, 1, tzinfo=timezone.utc))
    assert recent["total"] == 9 and recent["finished"] == 6
    assert recent["geomean_speedup"] == pytest.approx(16 ** (1 / 6))
    assert recent["gpu_hours"] == pytest.approx(6400 / 3600)
    old = job_queries.team_stats(session, built, until=datetime(2024, 1, 1, tzinfo=timezone.utc))
    assert old["total"] == 1 and old["geomean_speedup"] == pytest.approx(4.0)
    a = job_queries.team_stats(session, built, tag="a")
    assert a["total"] == 4 and a["outcomes"]["optimized"] == 2 and a["outcomes"]["failed"] == 1
    assert a["geomean_speedup"] == pytest.approx(16 ** (1 / 3))  # 2, 8, and the failed job at 1.0
    assert job_queries.team_stats(session, built, since=datetime.now(timezone.utc) + timedelta(days=1))["total"] == 0


def test_stats_of_an_empty_team(session, make_team):
    s = job_queries.team_stats(session, make_team().team.id)
    assert s["total"] == 0 and s["finished"] == 0 and s["gpu_hours"] == 0
    assert s["geomean_speedup"] is None and s["geomean_speedup_optimized"] is None
    assert not any(math.isnan(v) for v in s["by_status"].values())
