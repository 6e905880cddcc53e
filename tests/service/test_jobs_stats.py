"""team_stats on a hand-built set of jobs."""
from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import update

from kernelopt.service import job_queries
from kernelopt.storage.models import Job

from .test_jobs import submit

NOT_MEASURED = {"outcome": "fallback", "cause": "no-gpu: interpreter", "speedup": None, "baseline_ms": None,
                "timing": "not-measured", "timing_note": "no GPU: the Triton interpreter checks correctness only"}


@pytest.fixture
def built(session, team_key, blobs, settings):
    """Eleven jobs with known outcomes, speedups, GPU time, tags, creation times and timing."""
    tid = team_key.team.id
    spec = [  # status, outcome, speedup, gpu_seconds, tag, result
        ("succeeded", "optimized", 2.0, 3600.0, "a", None),
        ("succeeded", "optimized", 8.0, 1800.0, "a", None),
        ("succeeded", "matched", 0.97, 600.0, "b", None),   # not solved: deploys the baseline (1.0)
        ("succeeded", "fallback", None, 300.0, "b", None),  # no speedup recorded: not measured, never 1.0
        ("failed", "failed", None, 10.0, "a", None),        # no speed measured
        ("crashed", None, None, 90.0, None, None),          # no speed measured
        ("cancelled", None, None, 0.0, None, None),           # withdrawn: not "finished"
        ("queued", None, None, 0.0, "a", None),
        ("running", None, None, 0.0, None, None),
        ("succeeded", "optimized", 4.0, 7200.0, "old", None),  # created long ago
        ("succeeded", "fallback", None, 120.0, "b", NOT_MEASURED),  # ran without a GPU
    ]
    ids = []
    for i, (status, outcome, speedup, gpu, tag, result) in enumerate(spec):
        job, _ = submit(session, tid, blobs, settings, data=b"stats%d" % i, tag=tag)
        session.execute(update(Job).where(Job.id == job.id).values(
            status=status, outcome=outcome, speedup=speedup, gpu_seconds=gpu, result=result))
        ids.append(job.id)
    session.execute(update(Job).where(Job.id == ids[9])
                    .values(created_at=datetime(2020, 1, 1, tzinfo=timezone.utc)))
    session.commit()
    return tid


def test_stats_counts_geomeans_and_gpu_hours(session, built):
    s = job_queries.team_stats(session, built)
    assert s["total"] == 11
    assert s["by_status"] == {"queued": 1, "running": 1, "succeeded": 6, "failed": 1, "cancelled": 1, "crashed": 1}
    assert s["outcomes"] == {"optimized": 3, "matched": 1, "fallback": 2, "failed": 1, "crashed": 1, "cancelled": 1}
    assert s["finished"] == 8
    # Geomeans over measured jobs only: 2, 8, 4 and the matched one at 1.0 (its baseline runs). The
    # failed, the crashed, the job that ran without a GPU and the one that recorded no speedup have no
    # measured speed and are counted apart.
    assert s["measured"] == 4 and s["not_measured"] == 4
    assert s["geomean_speedup"] == pytest.approx((2 * 8 * 4) ** (1 / 4))
    assert s["geomean_speedup_optimized"] == pytest.approx(4.0)  # (2*8*4)^(1/3)
    assert s["gpu_seconds"] == pytest.approx(13720.0) and s["gpu_hours"] == pytest.approx(13720 / 3600)


def test_stats_time_range_and_tag(session, built):
    recent = job_queries.team_stats(session, built, since=datetime(2024, 1, 1, tzinfo=timezone.utc))
    assert recent["total"] == 10 and recent["finished"] == 7 and recent["measured"] == 3
    assert recent["geomean_speedup"] == pytest.approx(16 ** (1 / 3))
    assert recent["gpu_hours"] == pytest.approx(6520 / 3600)
    old = job_queries.team_stats(session, built, until=datetime(2024, 1, 1, tzinfo=timezone.utc))
    assert old["total"] == 1 and old["geomean_speedup"] == pytest.approx(4.0)
    a = job_queries.team_stats(session, built, tag="a")
    assert a["total"] == 4 and a["outcomes"]["optimized"] == 2 and a["outcomes"]["failed"] == 1
    assert a["geomean_speedup"] == pytest.approx(4.0) and a["not_measured"] == 1  # 2 and 8; the failed job apart
    b = job_queries.team_stats(session, built, tag="b")
    assert b["measured"] == 1 and b["not_measured"] == 2 and b["geomean_speedup"] == pytest.approx(1.0)
    assert job_queries.team_stats(session, built, since=datetime.now(timezone.utc) + timedelta(days=1))["total"] == 0


def test_stats_of_only_unmeasured_jobs_have_no_geomean(session, team_key, blobs, settings):
    tid = team_key.team.id
    job, _ = submit(session, tid, blobs, settings, data=b"no-gpu", tag=None)
    session.execute(update(Job).where(Job.id == job.id).values(status="succeeded", outcome="fallback",
                                                               result=NOT_MEASURED))
    session.commit()
    s = job_queries.team_stats(session, tid)
    assert s["finished"] == 1 and s["measured"] == 0 and s["not_measured"] == 1
    assert s["geomean_speedup"] is None and s["geomean_speedup_optimized"] is None


def test_stats_of_an_empty_team(session, make_team):
    s = job_queries.team_stats(session, make_team().team.id)
    assert s["total"] == 0 and s["finished"] == 0 and s["measured"] == 0 and s["gpu_hours"] == 0
    assert s["geomean_speedup"] is None and s["geomean_speedup_optimized"] is None
    assert not any(math.isnan(v) for v in s["by_status"].values())


def test_deployed_speedup_is_the_one_rule_of_measured():
    from kernelopt.service.job_queries import deployed_speedup as d

    assert d("succeeded", "optimized", 1.31, "measured") == 1.31
    assert d("succeeded", "optimized", 1.31, None) == 1.31  # a record from before `timing`: its speedup stands
    assert d("succeeded", "matched", 0.97, "measured") == 1.0 and d("succeeded", "fallback", 1.0, None) == 1.0
    for args in (("succeeded", "fallback", None, None), ("succeeded", "fallback", 1.0, "not-measured"),
                 ("succeeded", "optimized", float("nan"), "measured"), ("succeeded", "optimized", 0.0, None),
                 ("failed", "failed", None, None), ("crashed", None, 1.0, None), ("running", None, None, None)):
        assert d(*args) is None, args
