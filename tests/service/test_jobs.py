"""The job state machine: transitions, idempotency, queue limit, pagination, scoping, events, artifacts."""
from __future__ import annotations

import hashlib
import math
from datetime import timedelta

import pytest
from sqlalchemy import update

from kernelopt.service import job_queries, jobs
from kernelopt.service.job_queries import InvalidCursor
from kernelopt.service.jobs import IdempotencyConflict, QueueFull
from kernelopt.storage.models import Job, utcnow

KERNEL = b"import triton\n# a kernel file\n"


def submit(session, team_id, blobs, settings, data=KERNEL, options=None, weights=None, key=None, tag=None,
           filename="kernel.py"):
    return jobs.create_job(session, team_id, filename, data, options or {"dtype": "fp32"}, weights, key, tag,
                           blobs, settings)


def test_create_job_stores_input_and_queues(session, team_key, blobs, settings):
    job, created = submit(session, team_key.team.id, blobs, settings, weights=b"W", tag="ci")
    assert created and job.status == "queued" and job.attempts == 0 and len(job.id) == 32
    assert job.problem_sha256 == hashlib.sha256(KERNEL).hexdigest() == job.input_blob
    assert blobs.read_bytes(job.input_blob) == KERNEL and blobs.read_bytes(job.weights_blob) == b"W"
    assert job.created_at.tzinfo is not None and job.options == {"dtype": "fp32"} and job.tag == "ci"
    again = job_queries.get_job(session, team_key.team.id, job.id)
    assert again.created_at == job.created_at and again.created_at.utcoffset() == timedelta(0)
    assert [e.message for e in job_queries.events_after(session, job.id, 0)] == ["queued"]


def test_happy_path_with_artifacts(session, team_key, blobs, settings, tmp_path):
    tid = team_key.team.id
    job, _ = submit(session, tid, blobs, settings)
    claimed = jobs.claim_job(session, job.id, "w1")
    assert claimed.status == "running" and claimed.attempts == 1 and claimed.worker_id == "w1"
    assert claimed.heartbeat_at is not None and claimed.started_at is not None
    assert jobs.heartbeat(session, job.id, "w1")
    assert jobs.set_stage(session, job.id, "search", 0.5)
    assert job_queries.get_job(session, tid, job.id).stage == "search"
    (tmp_path / "report.json").write_text('{"ok": true}')
    (tmp_path / "optimized_module.py").write_text("class ModelNew: pass\n")
    result = {"outcome": "optimized", "speedup": 1.7, "cause": "2 kernels accepted", "error": None,
              "noise_pct": float("nan")}
    assert jobs.finish_job(session, job.id, "w1", result,
                           [("report.json", tmp_path / "report.json"),
                            ("optimized_module.py", tmp_path / "optimized_module.py")], blobs)
    done = job_queries.get_job(session, tid, job.id)
    assert (done.status, done.outcome, done.speedup, done.progress) == ("succeeded", "optimized", 1.7, 1.0)
    assert done.result["noise_pct"] is None  # NaN is not valid JSON; stored as null
    assert done.finished_at >= done.started_at and done.gpu_seconds >= 0
    arts = job_queries.list_artifacts(session, tid, job.id)
    assert [(a.name, a.content_type) for a in arts] == [("optimized_module.py", "text/x-python"),
                                                         ("report.json", "application/json")]
    rep = job_queries.get_artifact(session, tid, job.id, "report.json")
    assert blobs.read_bytes(rep.blob_sha256) == b'{"ok": true}' and rep.size == 12
    kinds = [e.data.get("status") for e in job_queries.events_after(session, job.id, 0)]
    assert kinds == ["queued", "running", "succeeded"]


def test_illegal_transitions_are_refused(session, team_key, blobs, settings):
    tid = team_key.team.id
    job, _ = submit(session, tid, blobs, settings)
    # Nothing but claim or cancel applies to a queued job.
    assert not jobs.finish_job(session, job.id, "w1", {"outcome": "matched"}, [], blobs)
    assert not jobs.fail_job(session, job.id, "w1", "x")
    assert not jobs.mark_cancelled(session, job.id, "w1")
    assert not jobs.heartbeat(session, job.id, "w1")
    assert not jobs.set_stage(session, job.id, "compile")
    assert job_queries.get_job(session, tid, job.id).status == "queued"
    assert jobs.claim_job(session, job.id, "w1") is not None
    # A claimed job cannot be claimed again (a redelivered message) nor touched by another worker.
    assert jobs.claim_job(session, job.id, "w2") is None
    assert not jobs.heartbeat(session, job.id, "w2")
    assert not jobs.finish_job(session, job.id, "w2", {"outcome": "matched"}, [], blobs)
    assert jobs.fail_job(session, job.id, "w1", "SyntaxError: bad file")
    failed = job_queries.get_job(session, tid, job.id)
    assert (failed.status, failed.outcome, failed.error) == ("failed", "failed", "SyntaxError: bad file")
    # Terminal means terminal.
    assert not jobs.finish_job(session, job.id, "w1", {"outcome": "optimized"}, [], blobs)
    assert not jobs.mark_cancelled(session, job.id, "w1")
    assert jobs.claim_job(session, job.id, "w1") is None
    assert jobs.request_cancel(session, tid, job.id).status == "failed"
    assert job_queries.get_job(session, tid, job.id).status == "failed"


def test_cancel_queued_and_running(session, team_key, blobs, settings):
    tid = team_key.team.id
    queued, _ = submit(session, tid, blobs, settings, data=b"a")
    c = jobs.request_cancel(session, tid, queued.id)
    assert c.status == "cancelled" and c.finished_at is not None
    assert jobs.claim_job(session, queued.id, "w1") is None  # a cancelled job never starts

    running, _ = submit(session, tid, blobs, settings, data=b"b")
    jobs.claim_job(session, running.id, "w1")
    assert not job_queries.is_cancel_requested(session, running.id)
    c = jobs.request_cancel(session, tid, running.id)
    assert c.status == "running" and c.cancel_requested  # the worker stops between stages
    assert job_queries.is_cancel_requested(session, running.id)
    assert not jobs.mark_cancelled(session, running.id, "w2")
    assert jobs.mark_cancelled(session, running.id, "w1")
    assert job_queries.get_job(session, tid, running.id).status == "cancelled"


def test_idempotency(session, make_team, blobs, settings):
    a, b = make_team().team.id, make_team().team.id
    j1, created1 = submit(session, a, blobs, settings, options={"dtype": "fp32", "precision": "strict"}, key="k1")
    j2, created2 = submit(session, a, blobs, settings, options={"precision": "strict", "dtype": "fp32"}, key="k1")
    assert created1 and not created2 and j2.id == j1.id  # key order in options does not matter
    with pytest.raises(IdempotencyConflict) as e:
        submit(session, a, blobs, settings, options={"dtype": "bf16"}, key="k1")
    assert e.value.job_id == j1.id
    with pytest.raises(IdempotencyConflict):
        submit(session, a, blobs, settings, options={"dtype": "fp32", "precision": "strict"}, key="k1", weights=b"w")
    with pytest.raises(IdempotencyConflict):
        submit(session, a, blobs, settings, data=KERNEL + b" ", key="k1")
    j3, created3 = submit(session, a, blobs, settings, key="k2")
    j4, created4 = submit(session, b, blobs, settings, options={"dtype": "fp32", "precision": "strict"}, key="k1")
    assert created3 and created4 and len({j1.id, j3.id, j4.id}) == 3  # keys are per team
    j5, created5 = submit(session, a, blobs, settings)
    j6, created6 = submit(session, a, blobs, settings)
    assert created5 and created6 and j5.id != j6.id  # without a key every POST is a new job


def test_queue_limit(session, team_key, blobs, settings):
    settings = settings.model_copy(update={"max_queued_jobs_per_team": 3})
    tid = team_key.team.id
    first = [submit(session, tid, blobs, settings, data=b"job%d" % i, key=f"k{i}")[0] for i in range(3)]
    with pytest.raises(QueueFull) as e:
        submit(session, tid, blobs, settings, data=b"one too many")
    assert e.value.queued == 3 and e.value.limit == 3 and 1 <= e.value.retry_after_s <= 3600
    assert not blobs.exists(hashlib.sha256(b"one too many").hexdigest())  # a refused submission stores nothing
    # A replayed key is answered even while the queue is full.
    assert submit(session, tid, blobs, settings, data=b"job0", key="k0") == (first[0], False)
    jobs.claim_job(session, first[0].id, "w1")  # one leaves the queue
    assert submit(session, tid, blobs, settings, data=b"fits now")[1]


def test_queue_limit_holds_under_concurrent_submissions(session_factory, team_key, blobs, settings):
    """Count-then-insert is serialised per team: 8 threads racing for 3 places get exactly 3."""
    import threading

    settings = settings.model_copy(update={"max_queued_jobs_per_team": 3})
    tid = team_key.team.id
    start, outcomes = threading.Barrier(8), []

    def one(i: int) -> None:
        s = session_factory()
        try:
            start.wait()
            submit(s, tid, blobs, settings, data=b"racer%d" % i)
            outcomes.append("queued")
        except QueueFull:
            outcomes.append("full")
        finally:
            s.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(outcomes) == ["full"] * 5 + ["queued"] * 3
    s = session_factory()
    assert jobs._count(s, tid, "queued") == 3
    s.close()


def test_queue_full_retry_after_uses_recent_run_times(session, team_key, blobs, settings):
    settings = settings.model_copy(update={"max_queued_jobs_per_team": 1})
    tid = team_key.team.id
    done, _ = submit(session, tid, blobs, settings, data=b"done")
    jobs.claim_job(session, done.id, "w")
    jobs.finish_job(session, done.id, "w", {"outcome": "matched"}, [], blobs)
    now = utcnow()
    session.execute(update(Job).where(Job.id == done.id).values(started_at=now - timedelta(seconds=300),
                                                                 finished_at=now))
    session.commit()
    submit(session, tid, blobs, settings, data=b"queued")
    with pytest.raises(QueueFull) as e:
        submit(session, tid, blobs, settings, data=b"refused")
    assert e.value.retry_after_s == 300  # one 300 s job ahead, one slot running at most


def test_team_scoping(session, make_team, blobs, settings):
    mine, theirs = make_team().team.id, make_team().team.id
    job, _ = submit(session, theirs, blobs, settings)
    assert job_queries.get_job(session, mine, job.id) is None
    assert jobs.request_cancel(session, mine, job.id) is None
    assert job_queries.get_job(session, theirs, job.id).status == "queued"  # untouched
    assert job_queries.list_jobs(session, mine) == ([], None)
    assert job_queries.list_artifacts(session, mine, job.id) is None
    assert job_queries.get_job(session, theirs, "no-such-job") is None


def test_pagination_is_stable_across_pages(session, team_key, blobs, settings):
    tid = team_key.team.id
    made = [submit(session, tid, blobs, settings, data=b"%d" % i)[0] for i in range(7)]
    # Three jobs share one timestamp: the id breaks the tie.
    same = made[2].created_at
    session.execute(update(Job).where(Job.id.in_([made[3].id, made[4].id])).values(created_at=same))
    session.commit()
    page1, cur = job_queries.list_jobs(session, tid, limit=3)
    assert len(page1) == 3 and cur
    # New jobs arriving between pages neither shift nor repeat the older pages.
    late = submit(session, tid, blobs, settings, data=b"late")[0]
    page2, cur = job_queries.list_jobs(session, tid, cursor=cur, limit=3)
    page3, cur3 = job_queries.list_jobs(session, tid, cursor=cur, limit=3)
    assert cur3 is None and len(page3) == 1
    seen = [j.id for j in page1 + page2 + page3]
    assert sorted(seen) == sorted(j.id for j in made) and late.id not in seen
    keys = [(j.created_at, j.id) for j in page1 + page2 + page3]
    assert keys == sorted(keys, reverse=True)  # newest first, total order
    first, _ = job_queries.list_jobs(session, tid, limit=50)
    assert first[0].id == late.id and len(first) == 8


def test_list_filters_and_bad_cursor(session, team_key, blobs, settings):
    tid = team_key.team.id
    a, _ = submit(session, tid, blobs, settings, data=b"a", tag="suite-a")
    b, _ = submit(session, tid, blobs, settings, data=b"b")
    jobs.claim_job(session, b.id, "w")
    jobs.finish_job(session, b.id, "w", {"outcome": "matched", "speedup": 1.0}, [], blobs)
    assert [j.id for j in job_queries.list_jobs(session, tid, status="queued")[0]] == [a.id]
    assert [j.id for j in job_queries.list_jobs(session, tid, outcome="matched")[0]] == [b.id]
    assert [j.id for j in job_queries.list_jobs(session, tid, tag="suite-a")[0]] == [a.id]
    assert {j.id for j in job_queries.list_jobs(session, tid, created_after=a.created_at)[0]} == {a.id, b.id}
    assert [j.id for j in job_queries.list_jobs(session, tid, created_before=b.created_at)[0]] == [a.id]
    for bad in ("garbage!", "eyJ0IjoxfQ", job_queries.encode_cursor(a)[:-3]):
        with pytest.raises(InvalidCursor):
            job_queries.list_jobs(session, tid, cursor=bad)


def test_events_resume_after_id(session, team_key, blobs, settings):
    job, _ = submit(session, team_key.team.id, blobs, settings)
    jobs.claim_job(session, job.id, "w")
    ids = [jobs.add_event(session, job.id, "search", "progress", f"step {i}", {"i": i}) for i in range(5)]
    assert ids == sorted(ids) and len(set(ids)) == 5
    after = job_queries.events_after(session, job.id, ids[1])
    assert [e.id for e in after] == ids[2:] and [e.data["i"] for e in after] == [2, 3, 4]
    assert [e.id for e in job_queries.events_after(session, job.id, ids[1], limit=2)] == ids[2:4]
    assert job_queries.events_after(session, job.id, ids[-1]) == []
    assert after[0].stage == "search" and after[0].kind == "progress" and not math.isnan(after[0].at.timestamp())
