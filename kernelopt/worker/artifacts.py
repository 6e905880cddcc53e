"""Artifacts leave a job's work directory through the worker, by name, size-capped.

The work directory is written by the engine and by the code it runs (the
submission, generated kernels), so the worker treats it as untrusted input.
`collect` copies into the blob store only:

- **expected names**: the files the engine writes (`ARTIFACT_NAMES`, plus one
  `diff_<kernel>.diff` per accepted kernel), at the top level of the work
  directory. Sub-directories are not entered: the engine writes none of its
  artifacts there, and what lives in them (compiler and kernel caches, a
  submission's own files) is neither a result nor bounded in count;
- **regular files**, opened relative to the work directory's own descriptor with
  `O_NOFOLLOW` (a symbolic link is refused, and no name can lead outside the
  directory: names are single path components), `O_NONBLOCK` (a FIFO swapped in
  cannot block the worker), checked again with `fstat` on the open descriptor
  (same inode as the `lstat`, one hard link);
- **within the caps**: `KERNELOPT_MAX_ARTIFACT_BYTES` per file and
  `KERNELOPT_MAX_JOB_ARTIFACT_BYTES` per job, by apparent size (`st_size`, so a
  sparse file counts fully), checked *before* anything is copied; the copy
  itself reads at most the size that was checked (`BlobStore.put_file`'s
  `max_bytes`), so a file that grows meanwhile is refused, not stored.

Files are taken in order of importance (the report and the deployable module
first), so the per-job cap drops the least useful ones. Everything refused is
returned with a reason (`Collected.skipped`); the worker puts it in the job's
result (`skipped_artifacts`) and in a `warning` event the user sees.

The copy runs in the worker process while its monitor thread keeps the job's
heartbeat fresh (worker/execute.py), so a large copy is never taken for a lost
worker.
"""
from __future__ import annotations

import errno
import logging
import os
import re
import stat
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from kernelopt.storage.blobs import BlobStore, BlobTooLarge

log = logging.getLogger("kernelopt.worker")

# What the engine writes into a job's work directory (pipeline/, compiled/), most
# important first: under the per-job cap, earlier names are stored first.
ARTIFACT_NAMES: tuple[str, ...] = (
    "report.json",                  # pipeline/job.py: the result, stage times, device
    "optimized_module.py",          # pipeline/optimized_module.py (or kernel_job.py): what a team deploys
    "optimized_module_tensors.pt",  # its constants, loaded by optimized_module.py when the graph has any
    "report.md",                    # pipeline/job.py
    # diff_<kernel>.diff files come here (DIFF_NAME)
    "baseline_module.py",           # compiled/capture.py (Inductor's code) or kernel_job.py (the kernel file)
    "problem.py",                   # pipeline/job.py: the submission, as the engine ran it
    "profile.json",                 # pipeline/model_job.py
    "capture.json",                 # compiled/graph.py: the captured graph
    "events.jsonl",                 # pipeline/job.py
    "trajectory.jsonl",             # pipeline/job.py: every candidate
    "transcripts.jsonl",            # agents/llm.py: every LLM prompt and reply, with token counts
    "experience.jsonl",             # agents/memory.py: one summarized experience item per attempt
    "capture_tensors.pt",           # compiled/capture.py: the constants baseline_module.py was run with
)
# pipeline/report.py: one per accepted kernel; kernel names are Python identifiers.
DIFF_NAME = re.compile(r"^diff_[A-Za-z0-9_][A-Za-z0-9_.-]{0,200}\.diff$")
# Not artifacts although the engine writes them: `weights.safetensors` (pipeline/job.py
# copies the job's weights in; they are the user's own upload, already a blob).

MAX_SKIPPED_LISTED = 50  # entries of `skipped` kept; the rest are only counted
STALE_INCOMING_S = 3600.0  # a blob-store temp file untouched this long belongs to a killed writer


def _rank(name: str) -> int | None:
    """Order of an expected name (lower first); None for a name that is not an artifact."""
    if name in ARTIFACT_NAMES:
        i = ARTIFACT_NAMES.index(name)
        return i if i < 4 else i + 1
    if DIFF_NAME.match(name):
        return 4
    return None


def is_artifact_name(name: str) -> bool:
    return _rank(name) is not None


@dataclass
class Collected:
    stored: dict[str, str] = field(default_factory=dict)  # name -> sha256 (in the blob store)
    sizes: dict[str, int] = field(default_factory=dict)
    skipped: list[dict] = field(default_factory=list)  # {"name", "reason", "detail", "size"}
    skipped_unlisted: int = 0  # refused entries beyond MAX_SKIPPED_LISTED
    started_at: str = ""  # UTC, ISO 8601
    seconds: float = 0.0
    stopped: bool = False  # should_stop() ended the copy early

    @property
    def bytes(self) -> int:
        return sum(self.sizes.values())

    def skip(self, name: str, reason: str, detail: str, size: int | None = None) -> None:
        if len(self.skipped) < MAX_SKIPPED_LISTED:
            self.skipped.append({"name": name, "reason": reason, "detail": detail, "size": size})
        else:
            self.skipped_unlisted += 1

    def summary(self) -> dict:
        """For the job's result: what was stored, in how long."""
        return {"started_at": self.started_at, "seconds": round(self.seconds, 3), "files": len(self.stored),
                "bytes": self.bytes, "skipped": len(self.skipped) + self.skipped_unlisted}

    def notes(self) -> list[tuple[str, str, str, dict]]:
        """The job's events (stage, kind, message, data) about its artifacts: what was stored, in how long
        (a `log` event), and, when anything was refused, a `warning` naming each refused file and why."""
        out = [("report", "log", f"stored {len(self.stored)} artifact{'s' if len(self.stored) != 1 else ''} "
                f"({human_bytes(self.bytes)}) in {self.seconds:.1f} s", self.summary())]
        warning = self.warning()
        return out + [warning] if warning is not None else out

    def warning(self) -> tuple[str, str, str, dict] | None:
        """The user-visible event about refused files; None if nothing was refused."""
        if not self.skipped and not self.skipped_unlisted:
            return None
        total = len(self.skipped) + self.skipped_unlisted
        parts = [f"{s['name']} ({s['detail']})" for s in self.skipped[:10]]
        if total > len(parts):
            parts.append(f"and {total - len(parts)} more")
        message = (f"{total} file{'s' if total != 1 else ''} of the work directory "
                   f"{'were' if total != 1 else 'was'} not kept as artifacts: " + "; ".join(parts))
        return "report", "warning", message, {"skipped_artifacts": self.skipped,
                                              "skipped_unlisted": self.skipped_unlisted}


def human_bytes(n: int) -> str:
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{n} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def collect(workdir: str | os.PathLike, blobs: BlobStore, *, max_file_bytes: int, max_job_bytes: int,
            should_stop: Callable[[], bool] | None = None) -> Collected:
    """Store the work directory's artifacts in `blobs`; see the module docstring.

    Refusals are returned, not raised. An error of the blob store itself (a full
    disk) propagates: that is the worker's failure, not the job's. `should_stop`
    is asked before each file (the worker's job was taken over: stop copying).
    """
    out = Collected(started_at=datetime.now(timezone.utc).isoformat())
    t0 = time.monotonic()
    try:
        blobs.remove_stale_incoming(STALE_INCOMING_S)
    except OSError:
        log.warning("could not sweep stale temp files of the blob store", exc_info=True)
    try:
        dfd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        out.seconds = time.monotonic() - t0
        return out  # the engine never got as far as writing anything
    except OSError as exc:
        # ELOOP/ENOTDIR: the work directory itself was replaced by a link or a file.
        out.skip(".", "not-a-directory", f"the work directory could not be opened safely: {exc.strerror}")
        out.seconds = time.monotonic() - t0
        return out
    try:
        _collect(dfd, blobs, max_file_bytes, max_job_bytes, should_stop, out)
    finally:
        os.close(dfd)
        out.seconds = time.monotonic() - t0
    return out


def _collect(dfd: int, blobs: BlobStore, max_file: int, max_job: int, should_stop, out: Collected) -> None:
    candidates: list[tuple[int, str, os.stat_result]] = []
    with os.scandir(dfd) as it:
        for entry in it:
            name = entry.name
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except OSError as exc:
                out.skip(name, "unreadable", f"could not be examined: {exc.strerror}")
                continue
            rank = _rank(name)
            if rank is None:
                out.skip(name, "unexpected-name", "not an artifact the engine writes", _size(st))
            elif not stat.S_ISREG(st.st_mode):
                out.skip(name, "not-a-regular-file", _kind(st.st_mode))
            elif st.st_nlink != 1:
                out.skip(name, "hard-linked", f"has {st.st_nlink} hard links", st.st_size)
            elif st.st_size > max_file:
                out.skip(name, "too-large", f"{human_bytes(st.st_size)}, over the per-file limit of "
                         f"{human_bytes(max_file)} (KERNELOPT_MAX_ARTIFACT_BYTES)", st.st_size)
            else:
                candidates.append((rank, name, st))
    total = 0
    for _, name, st in sorted(candidates):
        if should_stop is not None and should_stop():
            out.stopped = True
            return
        if total + st.st_size > max_job:
            out.skip(name, "job-limit", f"{human_bytes(st.st_size)} would take the job's artifacts past "
                     f"{human_bytes(max_job)} (KERNELOPT_MAX_JOB_ARTIFACT_BYTES)", st.st_size)
            continue
        sha = _store_one(dfd, name, st, blobs, out)
        if sha is not None:
            out.stored[name] = sha
            out.sizes[name] = st.st_size
            total += st.st_size


def _store_one(dfd: int, name: str, st: os.stat_result, blobs: BlobStore, out: Collected) -> str | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, dir_fd=dfd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            out.skip(name, "not-a-regular-file", "a symbolic link")
        else:
            out.skip(name, "unreadable", f"could not be opened: {exc.strerror}", st.st_size)
        return None
    with os.fdopen(fd, "rb") as f:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) \
                or now.st_nlink != 1 or now.st_size != st.st_size:
            out.skip(name, "changed", "replaced or changed while it was being stored", now.st_size)
            return None
        try:
            return blobs.put_file(f, max_bytes=st.st_size)
        except BlobTooLarge:
            out.skip(name, "changed", "grew while it was being stored", st.st_size)
            return None


def _size(st: os.stat_result) -> int | None:
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def collect_for_job(workdir: Path, blobs: BlobStore, settings, should_stop: Callable[[], bool] | None = None,
                    job_id: str = "") -> Collected:
    """`collect` with the service's caps, logged."""
    got = collect(workdir, blobs, max_file_bytes=settings.max_artifact_bytes,
                  max_job_bytes=settings.max_job_artifact_bytes, should_stop=should_stop)
    log.info("job %s: stored %d artifacts (%s) in %.2f s", job_id, len(got.stored), human_bytes(got.bytes),
             got.seconds)
    for s in got.skipped:
        log.warning("job %s: artifact %r not stored (%s): %s", job_id, s["name"], s["reason"], s["detail"])
    if got.skipped_unlisted:
        log.warning("job %s: %d more files not stored", job_id, got.skipped_unlisted)
    return got
