"""The engine writes its files into a work directory that sandboxed code wrote first (pipeline.report).

A submission runs in the same directory before the orchestrator writes its
report and modules there: whatever it left at those names (a link, a FIFO, a
directory) is replaced, never written through, never waited on.
"""
import os
import threading

import pytest

from kernelopt.pipeline.report import read_safely, write_json, write_safely


def test_a_link_is_replaced_not_written_through(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("someone else's")
    work = tmp_path / "work"
    work.mkdir()
    (work / "report.md").symlink_to(outside)
    (work / "baseline_module.py").symlink_to(tmp_path / "would-be-created.py")
    write_safely(work / "report.md", "# report\n")
    write_safely(work / "baseline_module.py", b"x = 1\n")
    assert outside.read_text() == "someone else's" and not (tmp_path / "would-be-created.py").exists()
    assert not (work / "report.md").is_symlink() and (work / "report.md").read_text() == "# report\n"
    assert (work / "baseline_module.py").read_bytes() == b"x = 1\n"
    assert oct((work / "report.md").stat().st_mode & 0o777) == oct(0o644)
    assert sorted(os.listdir(work)) == ["baseline_module.py", "report.md"]  # no temp file left


def test_a_fifo_or_a_directory_is_replaced_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "optimized_module.py")
    (tmp_path / "report.json").mkdir()
    (tmp_path / "report.json" / "inside").write_text("x")
    done = threading.Event()

    def write():
        write_safely(tmp_path / "optimized_module.py", "y = 2\n")
        write_json(tmp_path / "report.json", {"ok": True})
        done.set()

    threading.Thread(target=write, daemon=True).start()
    assert done.wait(10), "blocked on a FIFO"
    assert (tmp_path / "optimized_module.py").read_text() == "y = 2\n"
    assert (tmp_path / "report.json").read_text().strip().startswith("{")


def test_read_safely_refuses_links_fifos_and_large_files(tmp_path):
    (tmp_path / "module.py").write_text("z = 3\n")
    assert read_safely(tmp_path / "module.py") == b"z = 3\n"
    (tmp_path / "link.py").symlink_to(tmp_path / "module.py")
    os.mkfifo(tmp_path / "fifo.py")
    for name in ("link.py", "fifo.py"):
        with pytest.raises(OSError):
            read_safely(tmp_path / name)
    with pytest.raises(OSError):
        read_safely(tmp_path / "module.py", limit=3)
