"""Queue and workers against the real PostgreSQL, Redis and Celery worker processes.

Jobs are created with service.jobs directly and enqueued as the API does
(CeleryDispatcher.enqueue); real `celery worker` processes run them. Without a
GPU, single-kernel jobs run on the Triton interpreter and end `fallback`
("no-gpu: ..."), and so do model jobs (at once, without loading the model);
none of them records a speed.
"""
from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import pytest

from tests.service.worker.conftest import FAST, KERNEL, MODEL, UNIMPORTABLE, job_dir_removed

TERMINAL = ("succeeded", "failed", "cancelled", "crashed")


# --------------------------------------------------------------------------- helpers

def submit(settings, team_id: int, data: bytes, filename: str, options: dict | None = None) -> str:
    from kernelopt.service import jobs
    from kernelopt.storage.blobs import BlobStore
    from kernelopt.worker.execute import _scope

    with _scope(settings) as s:
        job, created = jobs.create_job(s, team_id, filename, data, options or {}, None, None, None,
                                       BlobStore(settings.blobs_dir), settings)
        assert created
        return job.id


def submit_file(settings, team_id: int, path: Path, options: dict | None = None) -> str:
    return submit(settings, team_id, path.read_bytes(), path.name, options)


def enqueue(settings, job_id: str) -> None:
    from kernelopt.worker.dispatch import CeleryDispatcher

    d = CeleryDispatcher(settings)
    try:
        d.enqueue(job_id)
    finally:
        d.close()


def load(settings, job_id: str):
    from kernelopt.service import job_queries
    from kernelopt.worker.execute import _scope

    with _scope(settings) as s:
        return job_queries.load_job(s, job_id)


def wait_for(settings, job_id: str, statuses=TERMINAL, timeout: float = 90, seen: list | None = None,
             until=None):
    """Poll the job until its status is one of `statuses` (and `until(job)` holds); records statuses seen."""
    deadline = time.monotonic() + timeout
    while True:
        job = load(settings, job_id)
        if seen is not None and (not seen or seen[-1] != job.status):
            seen.append(job.status)
        if job.status in statuses and (until is None or until(job)):
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} still {job.status} (stage {job.stage}) after {timeout} s; "
                                 f"wanted {statuses}")
        time.sleep(0.1)


def events(settings, job_id: str):
    from kernelopt.service import job_queries
    from kernelopt.worker.execute import _scope

    with _scope(settings) as s:
        return job_queries.events_after(s, job_id, 0, limit=10000)


def artifacts(settings, job_id: str):
    from sqlalchemy import select

    from kernelopt.storage.models import Artifact
    from kernelopt.worker.execute import _scope

    with _scope(settings) as s:
        return list(s.scalars(select(Artifact).where(Artifact.job_id == job_id).order_by(Artifact.name)))


def broker_empty(broker) -> bool:
    from kernelopt.worker.broker import QUEUE

    return broker.llen(QUEUE) == 0 and broker.hlen("unacked") == 0


def wait_broker_empty(broker, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not broker_empty(broker):
        assert time.monotonic() < deadline, "the worker did not consume its messages"
        time.sleep(0.2)


def running_events(evs) -> list:
    return [e for e in evs if e.kind == "status" and (e.data or {}).get("status") == "running"
            and "worker_id" in (e.data or {})]


# --------------------------------------------------------------------------- happy paths

def test_kernel_job_runs_to_succeeded_with_artifacts(wsettings, team_id, start_worker, broker):
    from kernelopt.storage.blobs import BlobStore

    start_worker()
    job_id = submit_file(wsettings, team_id, KERNEL, FAST)
    seen: list[str] = []
    assert load(wsettings, job_id).status == "queued"
    t0 = time.monotonic()
    enqueue(wsettings, job_id)
    job = wait_for(wsettings, job_id, seen=seen, timeout=120)
    elapsed = time.monotonic() - t0

    assert seen[0] == "queued" and "running" in seen and seen[-1] == "succeeded", seen
    # well inside its 150 s budget: under 60 s in earlier runs, 76 s on a slow 2-core machine with the suite beside it
    assert elapsed < 100, f"a single-kernel job took {elapsed:.0f} s"
    assert job.outcome == "fallback" and job.cause.startswith("no-gpu"), (job.outcome, job.cause)
    # Nothing timed on the interpreter is recorded as a speed.
    assert job.speedup is None and job.result["baseline_ms"] is None and job.result["timing"] == "not-measured"
    assert job.attempts == 1 and job.progress == 1.0 and job.finished_at is not None
    assert job.gpu_seconds == 0.0  # no GPU here: nothing is charged
    assert job.worker_id.startswith("w0@")
    assert job.result["outcome"] == "fallback" and job.result["stage_seconds"]["load"] > 0

    arts = {a.name: a for a in artifacts(wsettings, job_id)}
    assert {"report.json", "report.md", "optimized_module.py", "baseline_module.py", "events.jsonl",
            "trajectory.jsonl", "problem.py"} <= set(arts)
    assert sorted(arts) == sorted(job.result["artifacts"])
    blobs = BlobStore(wsettings.blobs_dir)
    report = json.loads(blobs.read_bytes(arts["report.json"].blob_sha256))
    assert report["result"]["outcome"] == "fallback"
    assert blobs.read_bytes(arts["problem.py"].blob_sha256) == KERNEL.read_bytes()
    assert arts["report.json"].size == blobs.size(arts["report.json"].blob_sha256)

    evs = events(wsettings, job_id)
    started = [e.stage for e in evs if e.kind == "stage_started"]
    assert started[:1] == ["load"] and "search" in started and "verify" in started, started
    assert [e.id for e in evs] == sorted(e.id for e in evs)
    assert len(running_events(evs)) == 1
    # The attempt's work directory is gone once the artifacts are in the blob store.
    assert job_dir_removed(wsettings, job_id)


def test_jobs_that_cannot_run_fail_with_their_message(wsettings, team_id, start_worker, broker):
    start_worker()
    model_id = submit_file(wsettings, team_id, MODEL)
    broken_id = submit(wsettings, team_id, UNIMPORTABLE, "broken_kernel.py")
    enqueue(wsettings, model_id)
    enqueue(wsettings, broken_id)

    # A valid model on a worker without a GPU is not a failed submission: it falls back, cause no-gpu.
    model = wait_for(wsettings, model_id, timeout=90)
    assert model.status == "succeeded" and model.outcome == "fallback", (model.status, model.error)
    assert model.cause.startswith("no-gpu: model mode needs a CUDA GPU"), model.cause
    assert model.speedup is None and model.result["timing"] == "not-measured"

    broken = wait_for(wsettings, broken_id, timeout=90)
    assert broken.status == "failed" and broken.outcome == "failed"
    assert "kernelopt_no_such_module_xyz" in broken.error, broken.error
    assert broken.attempts == 1
    # The engine's report of why it failed is kept with the job.
    kept = {a.name for a in artifacts(wsettings, broken_id)}
    assert {"report.json", "report.md", "events.jsonl"} <= kept, kept
    assert {"report.json", "report.md"} <= {a.name for a in artifacts(wsettings, model_id)}
    assert any(e.kind == "status" and "kernelopt_no_such_module_xyz" in e.message
               for e in events(wsettings, broken_id))


# --------------------------------------------------------------------------- faults

def test_worker_killed_mid_job_is_requeued_and_completes_once(wsettings, team_id, start_worker, broker):
    first = start_worker("doomed")
    job_id = submit_file(wsettings, team_id, KERNEL, FAST)
    enqueue(wsettings, job_id)
    # Mid-job: the load stage is done and the search runs.
    wait_for(wsettings, job_id, ("running",), timeout=60, until=lambda j: j.stage == "search")
    engine = first.descendants()
    assert engine, "the job runs in a child of the worker"
    first.kill()

    # The orphaned engine notices its worker is gone and ends (within a few seconds).
    deadline = time.monotonic() + 15
    while any(Path(f"/proc/{p}").exists() and "zombie" not in _state(p) for p in engine):
        assert time.monotonic() < deadline, "the engine child outlived its killed worker"
        time.sleep(0.2)
    assert load(wsettings, job_id).status == "running"  # nobody has noticed yet

    start_worker("rescuer")
    job = wait_for(wsettings, job_id, timeout=150)
    assert job.status == "succeeded" and job.outcome == "fallback", (job.status, job.error)
    assert job.attempts == 2 and job.worker_id.startswith("rescuer@")
    evs = events(wsettings, job_id)
    assert len(running_events(evs)) == 2
    assert sum(1 for e in evs if e.kind == "status" and "re-queued" in e.message) == 1
    assert sum(1 for e in evs if e.kind == "status" and (e.data or {}).get("status") == "succeeded") == 1
    arts = [a.name for a in artifacts(wsettings, job_id)]
    assert len(arts) == len(set(arts)) and sorted(arts) == sorted(job.result["artifacts"])  # one set


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split("\n")[0].lower()
    except (OSError, IndexError):
        return "zombie"


def test_duplicated_message_runs_the_job_once(wsettings, team_id, start_worker, broker):
    start_worker("a")
    start_worker("b")
    job_id = submit(wsettings, team_id, UNIMPORTABLE, "broken_kernel.py")
    enqueue(wsettings, job_id)
    enqueue(wsettings, job_id)  # both workers get a copy at about the same time
    job = wait_for(wsettings, job_id, timeout=90)
    wait_broker_empty(broker)
    time.sleep(1.0)
    job = load(wsettings, job_id)
    assert job.status == "failed" and job.attempts == 1
    assert len(running_events(events(wsettings, job_id))) == 1


def test_cancel_of_a_queued_job(wsettings, team_id, start_worker, broker):
    from kernelopt.service import jobs
    from kernelopt.worker.execute import _scope

    job_id = submit_file(wsettings, team_id, KERNEL, FAST)
    enqueue(wsettings, job_id)
    with _scope(wsettings) as s:
        job = jobs.request_cancel(s, team_id, job_id)
    assert job.status == "cancelled"

    w = start_worker()
    wait_broker_empty(broker)  # the worker took the message...
    job = load(wsettings, job_id)
    assert job.status == "cancelled" and job.attempts == 0  # ...and ran nothing
    assert running_events(events(wsettings, job_id)) == []
    # The reaper loop keeps the liveness file of the worker's main process fresh.
    alive = Path(tempfile.gettempdir()) / f"kernelopt-worker-{w.proc.pid}.alive"
    assert alive.exists() and time.time() - alive.stat().st_mtime < 10


def test_cancel_of_a_running_job(wsettings, team_id, start_worker, broker):
    from kernelopt.service import jobs
    from kernelopt.worker.execute import _scope

    start_worker()
    job_id = submit_file(wsettings, team_id, KERNEL, FAST)
    enqueue(wsettings, job_id)
    wait_for(wsettings, job_id, ("running",), timeout=60, until=lambda j: j.stage == "load")
    with _scope(wsettings) as s:
        assert jobs.request_cancel(s, team_id, job_id).cancel_requested
    job = wait_for(wsettings, job_id, timeout=60)
    assert job.status == "cancelled", (job.status, job.outcome, job.cause)
    assert job.attempts == 1 and job.finished_at is not None
    stages = [e.stage for e in events(wsettings, job_id) if e.kind == "stage_started"]
    assert "verify" not in stages, stages  # stopped between stages, long before the end
    assert artifacts(wsettings, job_id) == []


def test_worker_restart_loses_no_job(wsettings, team_id, start_worker, broker):
    w = start_worker("before")
    assert w.stop() == 0  # warm shutdown of an idle worker
    # Jobs submitted while no worker runs wait in Redis...
    ids = [submit_file(wsettings, team_id, MODEL), submit(wsettings, team_id, UNIMPORTABLE, "broken_kernel.py")]
    for job_id in ids:
        enqueue(wsettings, job_id)
    time.sleep(1)
    assert [load(wsettings, j).status for j in ids] == ["queued", "queued"]
    # ...and run when a worker starts again.
    start_worker("after")
    # (the model ends fallback/no-gpu here, the unimportable kernel file failed)
    for job_id, status in zip(ids, ("succeeded", "failed"), strict=True):
        job = wait_for(wsettings, job_id, timeout=90)
        assert job.status == status and job.attempts == 1 and job.worker_id.startswith("after@"), job.status


def test_queued_job_whose_message_was_lost_is_enqueued_again(wsettings, team_id, start_worker, broker):
    """The database is the system of record: a queued job with no message (Redis flushed, an
    enqueue that failed after the job was stored) is found by the reaper and run."""
    from sqlalchemy import update

    from kernelopt.storage.models import Job, utcnow
    from kernelopt.worker.execute import _scope

    job_id = submit(wsettings, team_id, UNIMPORTABLE, "broken_kernel.py")  # never enqueued
    with _scope(wsettings) as s:
        s.execute(update(Job).where(Job.id == job_id).values(created_at=utcnow().replace(year=2020)))
    start_worker()
    job = wait_for(wsettings, job_id, timeout=60)
    assert job.status == "failed" and job.attempts == 1


def test_reaper_marks_crashed_after_max_attempts(wsettings, team_id):
    """A job whose workers keep dying is not re-queued forever."""
    from sqlalchemy import update

    from kernelopt.service import jobs
    from kernelopt.storage.models import Job, utcnow
    from kernelopt.worker.execute import _scope
    from kernelopt.worker.reaper import reap_once

    job_id = submit(wsettings, team_id, UNIMPORTABLE, "broken_kernel.py")
    enqueued: list[str] = []
    for attempt in range(1, wsettings.max_job_attempts + 1):
        with _scope(wsettings) as s:
            assert jobs.claim_job(s, job_id, f"ghost-{attempt}") is not None
            s.execute(update(Job).where(Job.id == job_id).values(heartbeat_at=utcnow().replace(year=2020)))
        requeued, crashed = reap_once(wsettings, enqueued.append)
        if attempt < wsettings.max_job_attempts:
            assert job_id in requeued and job_id not in crashed
        else:
            assert job_id in crashed and job_id not in requeued
    job = load(wsettings, job_id)
    assert job.status == "crashed" and job.attempts == wsettings.max_job_attempts and "worker lost" in job.error
    assert enqueued == [job_id] * (wsettings.max_job_attempts - 1)


# --------------------------------------------------------------------------- embedded

def test_embedded_dispatcher_runs_jobs_on_sqlite(tmp_path):
    from kernelopt.service.auth import create_team
    from kernelopt.service.settings import Settings
    from kernelopt.storage.db import upgrade_database
    from kernelopt.worker.dispatch import EmbeddedDispatcher, make_dispatcher
    from kernelopt.worker.execute import _scope

    settings = Settings(database_url=None, broker_url=None, data_dir=tmp_path / "embedded",
                        heartbeat_interval_s=1, heartbeat_timeout_s=6, job_time_limit_s=240)
    assert settings.effective_database_url.startswith("sqlite")
    upgrade_database(settings.effective_database_url)
    with _scope(settings) as s:
        team = create_team(s, "embedded-team").id
    kernel_id = submit_file(settings, team, KERNEL, FAST)
    broken_id = submit(settings, team, UNIMPORTABLE, "broken_kernel.py")

    dispatcher = make_dispatcher(settings)
    assert isinstance(dispatcher, EmbeddedDispatcher)
    try:
        dispatcher.enqueue(kernel_id)
        assert dispatcher.wait_started(120)
        assert dispatcher.slots == [{}]  # no GPU here: one CPU slot
        kernel = wait_for(settings, kernel_id, timeout=120)
        broken = wait_for(settings, broken_id, timeout=60)
    finally:
        dispatcher.stop(timeout=5)
    assert kernel.status == "succeeded" and kernel.outcome == "fallback" and kernel.attempts == 1
    assert kernel.worker_id.startswith("embedded-")
    assert {"report.json", "optimized_module.py"} <= {a.name for a in artifacts(settings, kernel_id)}
    assert any(e.kind == "stage_started" and e.stage == "search" for e in events(settings, kernel_id))
    assert broken.status == "failed" and "kernelopt_no_such_module_xyz" in broken.error


def test_a_job_killed_at_its_time_limit_without_a_gpu_records_no_speed(tmp_path):
    """A job stopped by its time limit without a GPU records no speed, whichever stopped it first:
    the engine's own budget (its result says so) or the worker's hard limit (the worker's result,
    made in worker/execute.py, is marked not measured too)."""
    from kernelopt.service.auth import create_team
    from kernelopt.service.settings import Settings
    from kernelopt.storage.db import upgrade_database
    from kernelopt.worker.execute import _scope, execute_job

    settings = Settings(database_url=None, broker_url=None, data_dir=tmp_path / "limit", job_time_limit_s=2)
    upgrade_database(settings.effective_database_url)
    with _scope(settings) as s:
        team = create_team(s, "limit-team").id
    job_id = submit_file(settings, team, KERNEL, FAST)
    assert execute_job(job_id, settings, "w-limit") == "succeeded"
    job = load(settings, job_id)
    assert job.outcome == "fallback" and job.cause.startswith("timeout: "), job.cause
    assert job.speedup is None and job.result["timing"] == "not-measured"
    assert job.result["timing_note"] == "no GPU: the Triton interpreter checks correctness only"


def test_a_teams_compiler_caches_are_lent_to_its_next_job_and_to_no_other_team(tmp_path):
    """The worker lends a team's compiler caches (isolation.compile_cache) to its next job and takes them back
    with what the job's children added; another team's slot is never touched. An earlier job of team A is
    stood for by a file planted in its slot; the job's own additions are its kernel cache
    (KERNELOPT_KERNEL_CACHE, inside the caches)."""
    from kernelopt.service.auth import create_team
    from kernelopt.service.settings import Settings
    from kernelopt.storage.blobs import BlobStore
    from kernelopt.storage.db import upgrade_database
    from kernelopt.worker.execute import _scope, compile_cache_slot, execute_job

    settings = Settings(database_url=None, broker_url=None, data_dir=tmp_path / "cc", job_time_limit_s=240,
                        compile_cache=True)
    upgrade_database(settings.effective_database_url)
    with _scope(settings) as s:
        team_a, team_b = create_team(s, "cache-a").id, create_team(s, "cache-b").id
    slot_a, slot_b = compile_cache_slot(settings, team_a), compile_cache_slot(settings, team_b)
    assert slot_a is not None and slot_b is not None and slot_a != slot_b
    (slot_a / "inductor").mkdir(parents=True)
    (slot_a / "inductor" / "earlier-job.txt").write_text("autotune timings of an earlier job")
    (slot_b / "inductor").mkdir(parents=True)
    (slot_b / "inductor" / "team-b.txt").write_text("team b's own")

    job_id = submit_file(settings, team_a, KERNEL, FAST)
    assert execute_job(job_id, settings, "w-cache") == "succeeded"
    arts = {a.name: a for a in artifacts(settings, job_id)}
    report = json.loads(BlobStore(settings.blobs_dir).read_bytes(arts["report.json"].blob_sha256))
    assert report["compile_cache"]["files"] == 1  # the planted file, lent before the job's first child

    kept = sorted(p.relative_to(slot_a).as_posix() for p in slot_a.rglob("*") if p.is_file())
    assert "inductor/earlier-job.txt" in kept
    assert any(k.startswith("kernels/") for k in kept), kept  # the job's own additions came back
    assert sorted(p.name for p in slot_b.rglob("*") if p.is_file()) == ["team-b.txt"]
    assert job_dir_removed(settings, job_id)

    assert compile_cache_slot(Settings(database_url=None, broker_url=None, data_dir=tmp_path / "cc"), team_a) is None


# --------------------------------------------------------------------------- configuration

def test_celery_app_configuration(wsettings):
    from kernelopt.worker.broker import QUEUE, TASK_NAME, make_celery

    app = make_celery(wsettings)
    conf = app.conf
    assert conf.task_acks_late is True and conf.worker_prefetch_multiplier == 1 and conf.worker_concurrency == 1
    assert conf.broker_transport_options["visibility_timeout"] > wsettings.job_time_limit_s
    assert conf.task_default_queue == QUEUE and TASK_NAME in app.tasks


def test_make_dispatcher_picks_celery_with_a_broker(wsettings):
    from kernelopt.worker.dispatch import CeleryDispatcher, make_dispatcher

    d = make_dispatcher(wsettings)
    assert isinstance(d, CeleryDispatcher)
    d.close()


def test_worker_command_pins_one_gpu_per_process():
    from kernelopt.cli.worker import worker_specs
    from kernelopt.worker.dispatch import detect_slots, select_gpus

    specs = worker_specs([{"CUDA_VISIBLE_DEVICES": "0"}, {"CUDA_VISIBLE_DEVICES": "1"}])
    assert [s.env["CUDA_VISIBLE_DEVICES"] for s in specs] == ["0", "1"]
    assert [s.name for s in specs] == ["gpu0@%h", "gpu1@%h"]
    for s in specs:
        assert s.argv[s.argv.index("--concurrency") + 1] == "1"
        assert s.argv[1:5] == ["-m", "celery", "-A", "kernelopt.worker.celery_app"]
    cpu = worker_specs([{}])
    assert cpu[0].name == "cpu@%h"
    # This machine has no GPU: "all" means one CPU slot; asking for a GPU is refused clearly.
    assert select_gpus("0") == [] and detect_slots("all") == [{}]
    with pytest.raises(ValueError, match="requested but 0 visible"):
        select_gpus("1")
    with pytest.raises(ValueError, match="--gpus"):
        select_gpus("many")


def test_gpu_slots_share_the_hosts_cores_for_compile_workers():
    from kernelopt.pipeline.device import share_compile_threads

    eight = [{"CUDA_VISIBLE_DEVICES": str(i)} for i in range(8)]
    shared = share_compile_threads(eight, cpus=128, environ={})
    assert [s["TORCHINDUCTOR_COMPILE_THREADS"] for s in shared] == ["16"] * 8
    assert [s["CUDA_VISIBLE_DEVICES"] for s in shared] == [str(i) for i in range(8)]
    assert share_compile_threads(eight, cpus=4, environ={})[0]["TORCHINDUCTOR_COMPILE_THREADS"] == "1"
    # the operator's value stands; one slot keeps Inductor's own choice
    assert share_compile_threads(eight, cpus=128, environ={"TORCHINDUCTOR_COMPILE_THREADS": "4"}) == eight
    assert share_compile_threads([{"CUDA_VISIBLE_DEVICES": "0"}], cpus=128, environ={}) == [{"CUDA_VISIBLE_DEVICES": "0"}]
    # the worker command passes a slot's share to its Celery process
    from kernelopt.cli.worker import worker_specs

    assert worker_specs(shared[:2])[1].env["TORCHINDUCTOR_COMPILE_THREADS"] == "16"


def test_kernelopt_worker_command_supervises_and_stops_warm(wsettings, team_id, broker, tmp_path):
    """`kernelopt worker` without a GPU: one CPU Celery worker that runs jobs; SIGTERM stops it cleanly."""
    import os
    import re
    import signal
    import subprocess
    import sys

    from tests.service.worker.conftest import REPO, settings_env

    log_path = tmp_path / "kernelopt-worker.log"
    code = ("import argparse, sys; from kernelopt.cli.worker import register; p = argparse.ArgumentParser(); "
            "register(p.add_subparsers()); a = p.parse_args(sys.argv[1:]); sys.exit(a.func(a))")
    with open(log_path, "wb") as log:
        sup = subprocess.Popen([sys.executable, "-c", code, "worker", "--gpus", "all"], cwd=str(REPO),
                               env=settings_env(wsettings), stdout=log, stderr=subprocess.STDOUT)
    child = None
    try:
        deadline = time.monotonic() + 90
        while b" ready." not in log_path.read_bytes():
            assert sup.poll() is None and time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.2)
        text = log_path.read_text()
        m = re.search(r"started cpu@%h \(pid (\d+), CPU\)", text)
        assert m, text
        child = int(m.group(1))
        job_id = submit(wsettings, team_id, UNIMPORTABLE, "broken_kernel.py")
        enqueue(wsettings, job_id)
        job = wait_for(wsettings, job_id, timeout=60)
        assert job.status == "failed" and job.worker_id.startswith("cpu@")
        sup.send_signal(signal.SIGTERM)
        assert sup.wait(60) == 0
        assert not Path(f"/proc/{child}").exists() or "zombie" in _state(child)
    finally:
        if sup.poll() is None:
            sup.kill()
        if child is not None:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_monitor_records_each_event_line_once(wsettings, team_id, tmp_path):
    """events.jsonl is tailed line by line: a half-written line waits, nothing is recorded twice."""
    from kernelopt.service import jobs
    from kernelopt.worker.execute import _Monitor, _scope

    job_id = submit(wsettings, team_id, UNIMPORTABLE, "broken_kernel.py")
    with _scope(wsettings) as s:
        assert jobs.claim_job(s, job_id, "tester") is not None
    path = tmp_path / "events.jsonl"
    m = _Monitor(job_id, "tester", wsettings, path, tmp_path / "CANCEL")
    m.tail()  # no file yet
    line1 = json.dumps({"stage": "load", "kind": "stage_started", "message": "importing", "data": {}})
    line2 = json.dumps({"stage": "load", "kind": "progress", "message": "kernel problem x", "data": {"n": 1}})
    path.write_text(line1 + "\n" + line2[:10])
    m.tail()
    m.tail()
    with path.open("a") as f:
        f.write(line2[10:] + "\n")
    m.tail()
    m.tail()
    evs = [e for e in events(wsettings, job_id) if e.kind != "status"]
    assert [(e.stage, e.kind, e.message) for e in evs] == [("load", "stage_started", "importing"),
                                                           ("load", "progress", "kernel problem x")]
    assert evs[1].data == {"n": 1}
    job = load(wsettings, job_id)
    assert job.stage == "load" and 0 < job.progress < 1
    # A cancel request reaches the engine through the CANCEL file.
    assert not (tmp_path / "CANCEL").exists()
    with _scope(wsettings) as s:
        jobs.request_cancel(s, team_id, job_id)
    m.check_cancel()
    assert (tmp_path / "CANCEL").exists() and m.cancel_touched
    with _scope(wsettings) as s:
        assert jobs.mark_cancelled(s, job_id, "tester")
