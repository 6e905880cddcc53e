"""The reaper (requeue_stale) and concurrent claims/submissions from separate sessions."""
from __future__ import annotations

import threading
from datetime import timedelta

from sqlalchemy import update

from kernelopt.service import job_queries, jobs
from kernelopt.storage.models import Job, utcnow

from .test_jobs import submit


def _age_heartbeat(session, job_id, seconds):
    session.execute(update(Job).where(Job.id == job_id).values(heartbeat_at=utcnow() - timedelta(seconds=seconds)))
    session.commit()


def test_requeue_stale_up_to_the_limit_then_crashed(session, team_key, blobs, settings):
    tid = team_key.team.id
    job, _ = submit(session, tid, blobs, settings)
    for attempt in (1, 2):
        claimed = jobs.claim_job(session, job.id, f"w{attempt}")
        assert claimed.attempts == attempt
        session.execute(update(Job).where(Job.id == job.id)
                        .values(started_at=utcnow() - timedelta(seconds=130)))
        _age_heartbeat(session, job.id, 120)
        requeued, crashed = jobs.requeue_stale(session, heartbeat_timeout_s=60, max_attempts=3)
        assert job.id in requeued and job.id not in crashed
        j = job_queries.get_job(session, tid, job.id)
        assert (j.status, j.worker_id, j.heartbeat_at, j.attempts) == ("queued", None, None, attempt)
        assert 9 <= j.gpu_seconds / attempt <= 11  # each lost attempt ran ~10 s until its last heartbeat
        # The lost worker, if it comes back, owns nothing any more.
        assert not jobs.heartbeat(session, job.id, f"w{attempt}")
        assert not jobs.finish_job(session, job.id, f"w{attempt}", {"outcome": "matched"}, [], blobs)
    jobs.claim_job(session, job.id, "w3")
    _age_heartbeat(session, job.id, 120)
    requeued, crashed = jobs.requeue_stale(session, heartbeat_timeout_s=60, max_attempts=3)
    assert job.id in crashed and job.id not in requeued
    j = job_queries.get_job(session, tid, job.id)
    assert j.status == "crashed" and j.finished_at is not None and j.attempts == 3
    assert "no heartbeat for 60 s on attempt 3 of 3" in j.error
    assert jobs.claim_job(session, job.id, "w4") is None
    assert job.id not in sum(jobs.requeue_stale(session, 60, 3), [])  # crashed is final
    statuses = [e.data["status"] for e in job_queries.events_after(session, job.id, 0)]
    assert statuses == ["queued", "running", "queued", "running", "queued", "running", "crashed"]


def test_fresh_heartbeat_is_left_alone_and_cancel_requested_ends_cancelled(session, team_key, blobs, settings):
    tid = team_key.team.id
    alive, _ = submit(session, tid, blobs, settings, data=b"alive")
    jobs.claim_job(session, alive.id, "w1")
    _age_heartbeat(session, alive.id, 30)
    assert jobs.heartbeat(session, alive.id, "w1")
    doomed, _ = submit(session, tid, blobs, settings, data=b"doomed")
    jobs.claim_job(session, doomed.id, "w2")
    jobs.request_cancel(session, tid, doomed.id)
    _age_heartbeat(session, doomed.id, 600)
    requeued, crashed = jobs.requeue_stale(session, heartbeat_timeout_s=60, max_attempts=3)
    assert alive.id not in requeued + crashed and doomed.id not in requeued + crashed
    assert job_queries.get_job(session, tid, alive.id).status == "running"
    assert job_queries.get_job(session, tid, doomed.id).status == "cancelled"


def _race(n, fn):
    barrier = threading.Barrier(n)
    out, errors = [None] * n, []

    def run(i):
        try:
            barrier.wait()
            out[i] = fn(i)
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    return out


def test_concurrent_claims_exactly_one_wins(session_factory, team_key, blobs, settings):
    tid = team_key.team.id
    with session_factory() as s:
        ids = [submit(s, tid, blobs, settings, data=b"race%d" % i)[0].id for i in range(10)]
    for job_id in ids:
        def claim(i, job_id=job_id):
            with session_factory() as s:
                job = jobs.claim_job(s, job_id, f"worker-{i}")
                return job.worker_id if job else None

        winners = [w for w in _race(4, claim) if w is not None]
        assert len(winners) == 1
        with session_factory() as s:
            j = job_queries.load_job(s, job_id)
            assert j.attempts == 1 and j.worker_id == winners[0]


def test_concurrent_posts_with_one_idempotency_key_make_one_job(session_factory, team_key, blobs, settings):
    tid = team_key.team.id

    def post(i):
        with session_factory() as s:
            job, created = submit(s, tid, blobs, settings, data=b"same body", key="retry-storm")
            return job.id, created

    out = _race(6, post)
    assert len({job_id for job_id, _ in out}) == 1
    assert sum(created for _, created in out) == 1
    with session_factory() as s:
        assert len(job_queries.list_jobs(s, tid)[0]) == 1
