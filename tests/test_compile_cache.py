"""A team's compiler caches are kept between its jobs, and nothing but plain files comes back (isolation.compile_cache)."""
from __future__ import annotations

import os
from pathlib import Path

from kernelopt.isolation.compile_cache import CACHE_DIR, CacheSize, lend, measure, sanitize, take_back

FILES = {"triton/abc/kernel.cubin": b"\x7fELF" + b"x" * 60, "inductor/fx/graph.pkl": b"graph", "inductor/tuning.json": b"{}"}


def _write_tree(root: Path, files: dict[str, bytes] = FILES) -> None:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


def _read_tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _size(files: dict[str, bytes] = FILES) -> CacheSize:
    return CacheSize(len(files), sum(len(d) for d in files.values()))


def test_a_first_job_finds_no_caches(tmp_path):
    slot, job = tmp_path / "slots" / "team", tmp_path / "job"
    assert lend(slot, job) == CacheSize(0, 0)
    assert job.is_dir()  # created for the job
    assert not (job / CACHE_DIR).exists()
    assert not slot.exists()


def test_caches_a_job_wrote_are_lent_to_the_next_job_unchanged(tmp_path):
    slot, first, second = tmp_path / "slots" / "team", tmp_path / "job1", tmp_path / "job2"
    lend(slot, first)
    _write_tree(first / CACHE_DIR)

    assert take_back(first, slot) == _size()
    assert not (first / CACHE_DIR).exists()
    assert _read_tree(slot) == FILES

    assert lend(slot, second) == _size()
    assert _read_tree(second / CACHE_DIR) == FILES


def test_the_slot_is_empty_while_lent_so_a_concurrent_job_gets_nothing(tmp_path):
    slot = tmp_path / "slot"
    _write_tree(slot)
    assert lend(slot, tmp_path / "job1") == _size()
    assert not slot.exists()

    assert lend(slot, tmp_path / "job2") == CacheSize(0, 0)
    assert not (tmp_path / "job2" / CACHE_DIR).exists()
    assert _read_tree(tmp_path / "job1" / CACHE_DIR) == FILES


def test_caches_returned_after_the_slot_was_filled_meanwhile_are_dropped(tmp_path):
    slot, job1, job2 = tmp_path / "slot", tmp_path / "job1", tmp_path / "job2"
    lend(slot, job1)
    lend(slot, job2)
    _write_tree(job1 / CACHE_DIR)
    _write_tree(job2 / CACHE_DIR, {"triton/other.cubin": b"second job"})

    assert take_back(job2, slot) == CacheSize(1, len(b"second job"))
    assert take_back(job1, slot) == CacheSize(0, 0)
    assert _read_tree(slot) == {"triton/other.cubin": b"second job"}
    assert not (job1 / CACHE_DIR).exists()


def test_a_cache_folder_replaced_by_a_link_is_unlinked_and_its_target_untouched(tmp_path):
    slot, job, outside = tmp_path / "slot", tmp_path / "job", tmp_path / "outside"
    job.mkdir()
    _write_tree(outside)
    os.symlink(outside, job / CACHE_DIR)

    assert take_back(job, slot) == CacheSize(0, 0)
    assert not (job / CACHE_DIR).is_symlink() and not (job / CACHE_DIR).exists()
    assert not slot.exists()
    assert _read_tree(outside) == FILES


def test_a_cache_folder_replaced_by_a_file_is_deleted(tmp_path):
    slot, job = tmp_path / "slot", tmp_path / "job"
    job.mkdir()
    (job / CACHE_DIR).write_bytes(b"not a directory")

    assert take_back(job, slot) == CacheSize(0, 0)
    assert not (job / CACHE_DIR).exists()
    assert not slot.exists()


def test_a_link_left_in_the_caches_is_deleted_before_they_are_kept(tmp_path):
    slot, job, outside = tmp_path / "slot", tmp_path / "job", tmp_path / "outside"
    _write_tree(outside, {"secret": b"outside the job"})
    cache = job / CACHE_DIR
    _write_tree(cache)
    os.symlink(outside / "secret", cache / "triton" / "file-link")
    os.symlink(outside, cache / "inductor" / "dir-link")
    os.symlink(tmp_path / "missing", cache / "dangling")
    os.mkfifo(cache / "inductor" / "fx" / "fifo")

    assert take_back(job, slot) == _size()
    assert _read_tree(slot) == FILES
    left = {p.relative_to(slot).as_posix() for p in slot.rglob("*") if not p.is_dir() or p.is_symlink()}
    assert left == set(FILES)
    assert _read_tree(outside) == {"secret": b"outside the job"}


def test_sanitize_deletes_links_and_fifos_and_keeps_files_and_directories(tmp_path):
    _write_tree(tmp_path / "c")
    (tmp_path / "c" / "empty-dir").mkdir()
    os.symlink(tmp_path / "c" / "inductor", tmp_path / "c" / "triton" / "loop")
    os.mkfifo(tmp_path / "c" / "fifo")

    sanitize(tmp_path / "c")
    assert not (tmp_path / "c" / "triton" / "loop").is_symlink()
    assert not (tmp_path / "c" / "fifo").exists()
    assert (tmp_path / "c" / "empty-dir").is_dir()
    assert _read_tree(tmp_path / "c") == FILES


def test_measure_counts_regular_files_only_and_does_not_follow_links(tmp_path):
    _write_tree(tmp_path / "outside", {"big": b"y" * 1000})
    _write_tree(tmp_path / "c")
    os.symlink(tmp_path / "outside", tmp_path / "c" / "dir-link")
    os.symlink(tmp_path / "outside" / "big", tmp_path / "c" / "file-link")
    os.mkfifo(tmp_path / "c" / "fifo")

    assert measure(tmp_path / "c") == _size()
    assert measure(tmp_path / "c" / "dir-link") == CacheSize(0, 0)
    assert measure(tmp_path / "missing") == CacheSize(0, 0)


def test_caches_past_the_size_limit_are_dropped(tmp_path):
    slot, job = tmp_path / "slot", tmp_path / "job"
    _write_tree(job / CACHE_DIR)
    total = _size().bytes

    assert take_back(job, slot, max_bytes=total - 1) == CacheSize(0, 0)
    assert not slot.exists()
    assert not (job / CACHE_DIR).exists()


def test_caches_at_the_size_limit_are_kept(tmp_path):
    slot, job = tmp_path / "slot", tmp_path / "job"
    _write_tree(job / CACHE_DIR)

    assert take_back(job, slot, max_bytes=_size().bytes) == _size()
    assert _read_tree(slot) == FILES


def test_empty_caches_are_not_kept(tmp_path):
    slot, job = tmp_path / "slot", tmp_path / "job"
    (job / CACHE_DIR / "triton" / "empty").mkdir(parents=True)

    assert take_back(job, slot) == CacheSize(0, 0)
    assert not slot.exists()
    assert not (job / CACHE_DIR).exists()


def test_a_job_that_left_no_cache_folder_returns_nothing(tmp_path):
    slot, job = tmp_path / "slot", tmp_path / "job"
    job.mkdir()
    assert take_back(job, slot) == CacheSize(0, 0)
    assert not slot.exists()


def test_a_reused_work_directory_keeps_its_own_caches_and_the_slot_stays(tmp_path):
    slot, job = tmp_path / "slot", tmp_path / "job"
    _write_tree(slot)
    own = {"triton/own.cubin": b"the job's own"}
    _write_tree(job / CACHE_DIR, own)

    lend(slot, job)
    assert _read_tree(job / CACHE_DIR) == own
    assert _read_tree(slot) == FILES


def test_a_kept_kernel_file_that_does_not_hold_its_source_is_rewritten(tmp_path, monkeypatch):
    """Candidate kernels are cached by the hash of their source; a file of that name kept from an earlier job
    (or planted there) that holds other code is rewritten, never imported."""
    import hashlib

    from kernelopt.compiled.runtime import load_kernel_module

    monkeypatch.setenv("KERNELOPT_KERNEL_CACHE", str(tmp_path))
    source = "def run(*args, stream=None):\n    return 'the real kernel'\n"
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    planted = tmp_path / f"kernelopt_kernel_kept_{digest}.py"
    planted.write_text("def run(*args, stream=None):\n    return 'planted'\n")
    assert load_kernel_module(source, "kept").run() == "the real kernel"
    assert planted.read_text() == source


def _triton_cache_group(arg: tuple[str, str]) -> tuple[str, object]:
    """In a sandboxed child: Triton's own file cache writes a kernel and its group file, or reads the group back."""
    import os as _os

    from triton.runtime.cache import FileCacheManager

    mode, key = arg
    cache = FileCacheManager(key)
    if mode == "write":
        path = cache.put(b"\x7fELF cubin", "kernel.cubin", binary=True)
        cache.put_group("kernel.json", {"kernel.cubin": path})
        return _os.environ["TRITON_CACHE_DIR"], path
    return _os.environ["TRITON_CACHE_DIR"], cache.get_group("kernel.json")


def test_triton_finds_in_the_next_job_a_kernel_the_last_job_cached(tmp_path):
    """Triton's group files list a kernel's files by absolute path: a sandboxed child sees its caches at one path
    in every job (isolation.sandbox.CACHE_MOUNT), so caches lent from one job's scratch to another's still resolve.
    Under the old per-scratch path the lookup missed: the next job compiled every kernel again."""
    from kernelopt.isolation import job_sandbox, run_in_child
    from kernelopt.isolation.child import sandbox_layers
    from kernelopt.isolation.sandbox import CACHE_MOUNT
    from tests import TESTS_DIR  # the children run this module's function

    os.chmod(tmp_path, 0o711)
    slot, first, second = tmp_path / "slot", tmp_path / "job1", tmp_path / "job2"
    key = "k" * 32
    with job_sandbox() as held:
        lend(slot, first)
        where1, written = run_in_child(_triton_cache_group, ("write", key), timeout_s=120, scratch=first,
                                       uid=held.uid, read_only=TESTS_DIR)
        assert take_back(first, slot).files == 2
    with job_sandbox() as held:
        assert lend(slot, second).files == 2
        where2, group = run_in_child(_triton_cache_group, ("read", key), timeout_s=120, scratch=second, uid=held.uid,
                                     read_only=TESTS_DIR)
    assert group == {"kernel.cubin": written}, (where1, where2, group)
    if sandbox_layers().mechanism == "bwrap":  # a fresh root: the one mount point
        assert where1 == where2 == str(CACHE_MOUNT / "triton")
        assert (second / CACHE_DIR / "triton" / key / "kernel.cubin").read_bytes() == b"\x7fELF cubin"
