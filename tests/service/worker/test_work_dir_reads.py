"""The worker reads a job's work directory as sandboxed code left it (worker.execute).

The worker is privileged (root, where each job has a uid of its own); the
submission wrote that directory. A name swapped for a link (to another team's
blob, the database) is not followed, a FIFO does not block it, a device does not
make it read forever, and a line with no end does not fill its memory.
"""
import os
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from kernelopt.worker.execute import MAX_EVENTS_CHUNK, _Monitor, open_work_file, ran_on_gpu


def _monitor(tmp_path: Path) -> _Monitor:
    settings = SimpleNamespace(heartbeat_interval_s=1.0)
    return _Monitor("job", "worker", settings, tmp_path / "events.jsonl", tmp_path / "CANCEL")


def test_links_fifos_and_devices_are_not_read(tmp_path):
    secret = tmp_path / "someone-elses.jsonl"
    secret.write_text('{"message": "secret"}\n')
    (tmp_path / "link").symlink_to(secret)
    (tmp_path / "zero").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo")
    for name in ("link", "zero", "fifo"):
        with pytest.raises(OSError):
            open_work_file(tmp_path / name)
    (tmp_path / "report.json").symlink_to("/dev/zero")
    assert ran_on_gpu(tmp_path, {}) is False  # not an endless read: the fallback answer


@pytest.mark.parametrize("trap", ["fifo", "link"])
def test_the_events_tail_neither_blocks_nor_follows(tmp_path, trap):
    if trap == "fifo":
        os.mkfifo(tmp_path / "events.jsonl")
    else:
        (tmp_path / "other.jsonl").write_text('{"message": "team B"}\n')
        (tmp_path / "events.jsonl").symlink_to(tmp_path / "other.jsonl")
    m = _monitor(tmp_path)
    done = threading.Event()
    threading.Thread(target=lambda: (m.tail(), done.set()), daemon=True).start()
    assert done.wait(10), "the tail blocked"
    assert m.refused and m.events_recorded == 0


def test_a_line_longer_than_a_chunk_is_skipped_in_bounded_reads(tmp_path):
    with open(tmp_path / "events.jsonl", "wb") as f:
        f.truncate(3 * MAX_EVENTS_CHUNK)  # no newline at all (sparse)
    m = _monitor(tmp_path)
    t0 = time.monotonic()
    m.tail()
    assert m._offset == 3 * MAX_EVENTS_CHUNK and m.events_recorded == 0
    assert time.monotonic() - t0 < 10


def _events_of_file(tmp_path, settings, session_factory, team_key, blobs, line: str, n: int):
    """A job whose events.jsonl holds `n` copies of `line`, tailed by the worker's monitor: its recorded events."""
    from kernelopt.service import job_queries, jobs

    with session_factory() as s:
        job, _ = jobs.create_job(s, team_key.team.id, "kernel.py", b"import triton\n", {"dtype": "fp32"}, None,
                                 None, None, blobs, settings)
        job_id = job.id
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "events.jsonl").write_text((line + "\n") * n)
    m = _Monitor(job_id, "worker", settings, tmp_path / "events.jsonl", tmp_path / "CANCEL")
    for _ in range(40):
        m.tail()
    assert m._offset == n * (len(line) + 1)  # every line read
    with session_factory() as s:
        return job_queries.events_after(s, job_id, 0, limit=100_000)


def test_a_jobs_events_are_bounded_in_bytes_in_the_database(tmp_path, settings, session_factory, team_key, blobs):
    # issue 36, break 5: 150 event lines of 1 MiB grew the shared SQLite file from 2.4 MB to 151 MB
    import json

    from kernelopt.worker.execute import MAX_EVENT_BYTES_PER_JOB, MAX_EVENT_MESSAGE

    huge = json.dumps({"stage": "search", "kind": "progress", "message": "m" * ((1 << 20) - 30_000),
                       "data": {"blob": "d" * 20_000}})
    events = _events_of_file(tmp_path / "a", settings, session_factory, team_key, blobs, huge, 150)
    assert len(events) == 151  # queued, then each line, its message cut and its data dropped
    assert all(len(e.message) < MAX_EVENT_MESSAGE + 100 and len(json.dumps(e.data)) < 200 for e in events)
    many = json.dumps({"stage": "search", "kind": "progress", "message": "m" * 3900})
    events = _events_of_file(tmp_path / "b", settings, session_factory, team_key, blobs, many, 1500)
    total = sum(len(e.message) + len(json.dumps(e.data)) for e in events)
    assert total <= MAX_EVENT_BYTES_PER_JOB + 2 * MAX_EVENT_MESSAGE and len(events) < 1500
    assert "more than 4 MiB of events: no more of its events are recorded" in events[-1].message
