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
