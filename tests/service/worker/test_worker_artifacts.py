"""Artifacts leave the sandbox through the worker (issue 7, part 2), end to end.

Real jobs on real workers: a Celery worker on PostgreSQL + Redis, and the
embedded dispatcher on SQLite. The submissions plant files in their own work
directory when they are imported (the engine imports them in its load child),
as a hostile submission would.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

from tests.service.worker.conftest import FAST, KERNEL, UNIMPORTABLE, job_dir_removed
from tests.service.worker.test_worker import artifacts, enqueue, events, load, submit, wait_for

GiB = 1024 ** 3

# Appended to a working kernel file: at import, fill the job's work directory (next to the
# input directory the worker copied the submission into) with what must not become a blob.
PLANT = '''

def _kernelopt_test_plant():
    import os
    from pathlib import Path

    work = Path(__file__).resolve().parent.parent / "work"
    if not work.is_dir():
        raise RuntimeError(f"test submission: no work directory at {work}")
    # An artifact name, 3 GiB by apparent size (sparse): under the sandbox's 4 GiB file-size
    # limit (a 6 GiB file cannot be written there at all), far over the per-file cap.
    huge = work / "diff_huge.diff"
    if not huge.exists():
        huge.touch()
        os.truncate(huge, 3 << 30)
    (work / "notes.txt").write_text("not an artifact name")
    if not (work / "profile.json").is_symlink():
        (work / "profile.json").symlink_to("/etc/passwd")
    (work / "cache").mkdir(exist_ok=True)
    (work / "cache" / "report.json").write_text("{}")


_kernelopt_test_plant()
'''

# Imported by the load child: writes a 1 GiB (sparse, allowed) artifact, then fails the job.
SLOW_COPY = '''
import os
from pathlib import Path


def launch(x):
    return x


def reference(x):
    return x


def get_inputs():
    return []


_work = Path(__file__).resolve().parent.parent / "work"
_big = _work / "capture_tensors.pt"
_big.touch()
os.truncate(_big, 1 << 30)
raise RuntimeError("test submission: fails after writing a large artifact")
'''


def _incoming(root: Path) -> list[Path]:
    return list(Path(root).rglob(".incoming-*")) if Path(root).exists() else []


def test_hostile_work_directory_job_succeeds_and_says_what_was_dropped(wsettings, team_id, start_worker, broker):
    """A 3 GiB sparse file is refused by apparent size at once, an unexpected name and a link to
    /etc/passwd are not stored, a sub-directory is not entered; the job still succeeds, its result
    and a warning event say what was dropped and why, and no temp file is left."""
    start_worker()
    job_id = submit(wsettings, team_id, KERNEL.read_bytes() + PLANT.encode(), "add_relu_kernel.py", FAST)
    enqueue(wsettings, job_id)
    job = wait_for(wsettings, job_id, timeout=150)
    assert job.status == "succeeded" and job.outcome == "fallback", (job.status, job.outcome, job.cause, job.error)
    assert job.attempts == 1

    stored = {a.name for a in artifacts(wsettings, job_id)}
    assert {"report.json", "report.md", "optimized_module.py", "baseline_module.py", "events.jsonl",
            "trajectory.jsonl", "problem.py"} <= stored
    assert not stored & {"diff_huge.diff", "notes.txt", "profile.json", "cache", "cache/report.json"}
    assert sorted(stored) == job.result["artifacts"]

    skipped = {s["name"]: s for s in job.result["skipped_artifacts"]}
    assert skipped["diff_huge.diff"]["reason"] == "too-large" and skipped["diff_huge.diff"]["size"] == 3 * GiB
    assert skipped["notes.txt"]["reason"] == "unexpected-name"
    # The link never reaches the collector: the sandbox removes links a child leaves in its scratch
    # (the collector's own refusal of non-regular files is tested in test_artifacts.py).
    assert "profile.json" not in skipped
    assert skipped["cache"]["reason"] == "unexpected-name"
    # The refusal is by size, before any byte is read: the whole store took well under a second.
    assert job.result["artifacts_stored"]["seconds"] < 2.0, job.result["artifacts_stored"]
    assert job.result["artifacts_stored"]["bytes"] < 10 * 1024 ** 2

    (note,) = [e for e in events(wsettings, job_id) if e.kind == "warning"]
    assert "diff_huge.diff (3.0 GiB, over the per-file limit" in note.message, note.message
    assert "notes.txt" in note.message
    assert {s["name"] for s in note.data["skipped_artifacts"]} == set(skipped)
    final = [e for e in events(wsettings, job_id) if e.kind == "status"][-1]
    assert final.data["status"] == "succeeded" and final.id > note.id  # the note comes before the end

    from kernelopt.storage.blobs import BlobStore

    passwd = hashlib.sha256(Path("/etc/passwd").read_bytes()).hexdigest()
    assert not BlobStore(wsettings.blobs_dir).exists(passwd)
    assert _incoming(wsettings.blobs_dir) == []
    assert job_dir_removed(wsettings, job_id)


def test_tampered_input_blob_fails_the_job_and_runs_nothing(wsettings, team_id, start_worker, broker):
    from kernelopt.storage.blobs import BlobStore

    start_worker()
    job_id = submit(wsettings, team_id, UNIMPORTABLE + b"# " + uuid.uuid4().hex.encode() + b"\n", "k.py")
    sha = load(wsettings, job_id).input_blob
    path = BlobStore(wsettings.blobs_dir).path(sha)
    os.chmod(path, 0o644)
    with open(path, "ab") as f:
        f.write(b"import os; os.system('echo pwned')\n")
    enqueue(wsettings, job_id)
    job = wait_for(wsettings, job_id, timeout=60)
    assert job.status == "failed" and "corrupt" in job.error and sha in job.error, job.error
    assert not [e for e in events(wsettings, job_id) if e.kind == "stage_started"]  # the engine never ran


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def test_heartbeat_continues_while_a_large_artifact_is_copied(tmp_path):
    """Embedded dispatcher on SQLite, heartbeat every 0.25 s, timeout 1.5 s: a 1 GiB (allowed) artifact
    takes seconds to copy (6.6 s on the 2-core CI box). The heartbeat advances during the copy and the
    reaper never takes the job away (the issue: it was re-queued three times and marked crashed)."""
    from kernelopt.service.auth import create_team
    from kernelopt.service.settings import Settings
    from kernelopt.storage.db import upgrade_database
    from kernelopt.worker.dispatch import EmbeddedDispatcher
    from kernelopt.worker.execute import _scope

    settings = Settings(database_url=None, broker_url=None, data_dir=tmp_path / "embedded",
                        heartbeat_interval_s=0.25, heartbeat_timeout_s=1.5, max_job_attempts=3,
                        job_time_limit_s=240, max_artifact_bytes=2 * GiB, max_job_artifact_bytes=2 * GiB)
    upgrade_database(settings.effective_database_url)
    with _scope(settings) as s:
        team = create_team(s, "heartbeat-team").id
    job_id = submit(settings, team, SLOW_COPY.encode(), "slow_copy.py")

    dispatcher = EmbeddedDispatcher(settings, slots=[{}])
    beats: set[datetime] = set()
    try:
        deadline = time.monotonic() + 180
        while True:
            job = load(settings, job_id)
            if job.heartbeat_at is not None and job.status == "running":
                beats.add(_utc(job.heartbeat_at))
            if job.status not in ("queued", "running"):
                break
            assert time.monotonic() < deadline, f"job still {job.status}"
            time.sleep(0.05)
    finally:
        dispatcher.stop(timeout=30)
    try:
        assert job.status == "failed" and "fails after writing a large artifact" in job.error, job.error
        assert job.attempts == 1, "the reaper took the job away during the copy"
        assert not [e for e in events(settings, job_id) if "re-queued" in e.message]
        stored = {a.name: a for a in artifacts(settings, job_id)}
        assert stored["capture_tensors.pt"].size == GiB and "report.json" in stored

        # When the copy ran: the worker's `log` event about the artifacts says (its start and length).
        (stored_note,) = [e for e in events(settings, job_id) if e.kind == "log" and e.stage == "report"
                          and e.message.startswith("stored ")]
        start = datetime.fromisoformat(stored_note.data["started_at"])
        seconds = stored_note.data["seconds"]
        end = start + timedelta(seconds=seconds)
        during = sorted(b for b in beats if start < b < end)
        assert seconds > 0.75, f"the copy took only {seconds} s: too fast to show anything"
        assert len(during) >= 2, (start, end, sorted(beats)[-10:])
        # Beats about every interval all through the copy, not just at its start.
        gaps = [(b - a).total_seconds() for a, b in zip([start] + during, during + [end], strict=True)]
        assert max(gaps) < settings.heartbeat_timeout_s, gaps
        print(f"copy of 1 GiB: {seconds:.2f} s, {len(during)} heartbeats during it, largest gap {max(gaps):.2f} s")
    finally:
        shutil.rmtree(settings.blobs_dir, ignore_errors=True)  # 1 GiB
