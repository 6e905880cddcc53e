"""worker.artifacts.collect on real directories and a real blob store: what leaves a work directory.

The work directory is written by code the service does not trust; these are the
files such code can leave there: a 6 GiB sparse file, an unexpected name, a link
to /etc/passwd, a hard link, a FIFO, a sub-directory, a work directory that is
itself a link.
"""
from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from kernelopt.storage.blobs import BlobStore
from kernelopt.worker.artifacts import ARTIFACT_NAMES, MAX_SKIPPED_LISTED, collect, is_artifact_name

MiB = 1024 * 1024
GiB = 1024 * MiB


def incoming(root: Path) -> list[str]:
    return [n for _, _, files in os.walk(root) for n in files if n.startswith(".incoming-")]


@pytest.fixture
def store(tmp_path) -> BlobStore:
    return BlobStore(tmp_path / "blobs")


@pytest.fixture
def work(tmp_path) -> Path:
    w = tmp_path / "work"
    w.mkdir()
    (w / "report.json").write_text('{"result": {"outcome": "fallback"}}')
    (w / "optimized_module.py").write_text("class ModelNew: pass\n")
    (w / "diff_triton_poi_fused_add_0.diff").write_text("--- a\n+++ b\n")
    return w


def by_name(skipped: list[dict]) -> dict[str, dict]:
    return {s["name"]: s for s in skipped}


def test_names_the_engine_writes_are_stored_and_nothing_else(work, store):
    (work / "notes.txt").write_text("written by a submission")
    (work / "weights.safetensors").write_bytes(b"\0" * 100)  # the user's own upload, already a blob
    (work / "cache").mkdir()
    (work / "cache" / "report.json").write_text("{}")  # sub-directories are not entered
    got = collect(work, store, max_file_bytes=MiB, max_job_bytes=10 * MiB)
    assert sorted(got.stored) == ["diff_triton_poi_fused_add_0.diff", "optimized_module.py", "report.json"]
    for name, sha in got.stored.items():
        assert store.read_bytes(sha) == (work / name).read_bytes()
        assert got.sizes[name] == (work / name).stat().st_size
    skipped = by_name(got.skipped)
    assert set(skipped) == {"notes.txt", "weights.safetensors", "cache"}
    assert skipped["notes.txt"]["reason"] == "unexpected-name"
    assert skipped["cache"]["reason"] == "unexpected-name"
    assert got.warning() is not None and "notes.txt" in got.warning()[2]
    (log_note, warning) = got.notes()
    assert log_note[1] == "log" and log_note[3]["files"] == 3 and warning == got.warning()
    assert incoming(store.root) == []


def test_allow_list_covers_what_the_engine_writes():
    for name in ("report.json", "report.md", "baseline_module.py", "optimized_module.py",
                 "optimized_module_tensors.pt", "trajectory.jsonl", "events.jsonl", "profile.json", "capture.json",
                 "capture_tensors.pt", "problem.py", "diff_triton_red_fused_sum_1.diff", "diff_add_relu_kernel.diff"):
        assert is_artifact_name(name), name
    for name in ("weights.safetensors", "notes.txt", "diff_.diff", "diff_a.diff.bak", "x/report.json", ".report.json",
                 "report.json ", "diff_a/b.diff", "REPORT.JSON"):
        assert not is_artifact_name(name), name
    assert len(set(ARTIFACT_NAMES)) == len(ARTIFACT_NAMES)


def test_a_6_gib_sparse_file_is_refused_by_apparent_size_without_reading_it(work, store):
    huge = work / "trajectory.jsonl"
    huge.touch()
    os.truncate(huge, 6 * GiB)
    assert huge.stat().st_blocks * 512 < MiB  # sparse: nothing on disk
    t0 = time.monotonic()
    got = collect(work, store, max_file_bytes=128 * MiB, max_job_bytes=512 * MiB)
    elapsed = time.monotonic() - t0
    assert elapsed < 1.0, f"refusing a sparse file took {elapsed:.2f} s"
    assert "trajectory.jsonl" not in got.stored and "report.json" in got.stored
    s = by_name(got.skipped)["trajectory.jsonl"]
    assert s["reason"] == "too-large" and s["size"] == 6 * GiB
    assert "6.0 GiB" in s["detail"] and "KERNELOPT_MAX_ARTIFACT_BYTES" in s["detail"]
    assert incoming(store.root) == []
    assert sum(p.stat().st_size for p in store.root.rglob("*") if p.is_file()) < MiB


def test_a_symlink_to_etc_passwd_is_not_stored(work, store):
    (work / "profile.json").symlink_to("/etc/passwd")
    (work / "capture.json").symlink_to(work / "report.json")  # a link inside the directory is refused too
    (work / "report.md").symlink_to("/nonexistent/dangling")
    got = collect(work, store, max_file_bytes=MiB, max_job_bytes=10 * MiB)
    for name in ("profile.json", "capture.json", "report.md"):
        assert name not in got.stored
        assert by_name(got.skipped)[name] == {"name": name, "reason": "not-a-regular-file",
                                              "detail": "a symbolic link", "size": None}
    passwd = hashlib.sha256(Path("/etc/passwd").read_bytes()).hexdigest()
    assert not store.exists(passwd)


def test_hard_links_fifos_and_a_linked_work_directory_are_refused(work, store, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("the service's secret")
    os.link(outside, work / "events.jsonl")
    os.mkfifo(work / "capture.json")  # opening it for reading would block a naive copy forever
    got = collect(work, store, max_file_bytes=MiB, max_job_bytes=10 * MiB)
    skipped = by_name(got.skipped)
    assert skipped["events.jsonl"]["reason"] == "hard-linked"
    assert skipped["capture.json"] == {"name": "capture.json", "reason": "not-a-regular-file",
                                       "detail": "a FIFO", "size": None}
    assert "events.jsonl" not in got.stored and "capture.json" not in got.stored
    assert not store.exists(hashlib.sha256(b"the service's secret").hexdigest())

    linked = tmp_path / "linked-work"
    linked.symlink_to(work)
    got = collect(linked, store, max_file_bytes=MiB, max_job_bytes=10 * MiB)
    assert got.stored == {} and got.skipped[0]["reason"] == "not-a-directory"
    assert collect(tmp_path / "never-made", store, max_file_bytes=MiB, max_job_bytes=MiB).stored == {}


def test_the_per_job_cap_keeps_the_most_important_files(work, store):
    (work / "trajectory.jsonl").write_bytes(b"t" * (600 * 1024))
    (work / "events.jsonl").write_bytes(b"e" * (300 * 1024))
    (work / "capture_tensors.pt").write_bytes(b"c" * (200 * 1024))
    got = collect(work, store, max_file_bytes=MiB, max_job_bytes=600 * 1024)
    # report.json, optimized_module.py and the diff first, then events.jsonl (before trajectory.jsonl),
    # then capture_tensors.pt still fits where trajectory.jsonl did not.
    assert {"report.json", "optimized_module.py", "diff_triton_poi_fused_add_0.diff", "events.jsonl",
            "capture_tensors.pt"} == set(got.stored)
    assert got.bytes <= 600 * 1024
    s = by_name(got.skipped)["trajectory.jsonl"]
    assert s["reason"] == "job-limit" and "KERNELOPT_MAX_JOB_ARTIFACT_BYTES" in s["detail"]


def test_many_unexpected_files_are_counted_not_all_listed(work, store):
    for i in range(MAX_SKIPPED_LISTED + 25):
        (work / f"junk{i}.txt").write_text("x")
    got = collect(work, store, max_file_bytes=MiB, max_job_bytes=MiB)
    assert len(got.skipped) == MAX_SKIPPED_LISTED and got.skipped_unlisted == 25
    assert got.summary()["skipped"] == MAX_SKIPPED_LISTED + 25
    stage, kind, message, data = got.warning()
    assert kind == "warning" and f"{MAX_SKIPPED_LISTED + 25} files" in message and "more" in message
    assert data["skipped_unlisted"] == 25


def test_should_stop_ends_the_copy(work, store):
    got = collect(work, store, max_file_bytes=MiB, max_job_bytes=MiB, should_stop=lambda: True)
    assert got.stopped and got.stored == {}


def test_stale_incoming_files_of_killed_writers_are_swept(work, store):
    store.root.mkdir(parents=True)
    stale, fresh = store.root / ".incoming-dead", store.root / ".incoming-live"
    stale.write_bytes(b"x" * 1000)
    fresh.write_bytes(b"y")
    old = time.time() - 2 * 3600
    os.utime(stale, (old, old))
    collect(work, store, max_file_bytes=MiB, max_job_bytes=MiB)
    assert not stale.exists() and fresh.exists()
