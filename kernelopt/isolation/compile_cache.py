"""The compiler caches a job's children leave, kept for the next job of the same team.

Inductor and Triton cache what compiling a model costs: autotune timings per shape and
device, compiled kernels (`TORCHINDUCTOR_CACHE_DIR`, `TRITON_CACHE_DIR`; the capture takes
no whole graphs from Inductor's FX graph cache: `compiled.capture`). The sandbox points both
into the job's scratch (`<workdir>/.cache`,
`isolation.sandbox.child_environment`), and a job ends by deleting them, so a team that
submits the same network again pays its whole max-autotune compile again (minutes for a
ResNet at batch 10 on an H100). A *slot* keeps them between jobs:

- `lend(slot, workdir)` moves the slot's caches into the job's scratch before its first
  child (one rename: the slot is empty while a job holds it, so two jobs never share one);
- `take_back(workdir, slot, max_bytes)` moves them back after the job's last child.

What comes back was written by sandboxed code, so it is believed in nothing: links and
anything but regular files and directories are deleted, and a tree past `max_bytes` (or
not a directory) is dropped whole. Only sandboxed children of the same team's later jobs
ever read it (the service keeps one slot per team: `worker.execute`), never the trusted
side, and Inductor and Triton key every entry by the device, the versions and the source
they were made from. A poisoned entry could only mislead the same team's own later jobs,
whose verdicts are still computed outside their children.

A sandboxed child sees them at one path in every job (isolation.sandbox.CACHE_MOUNT): Triton's cache
lists a kernel's files by absolute path, so under a per-job path the next job found none of its kernels.

Not yet confirmed on a GPU: on an H100 a capture from a slot failed with a PermissionError
on the directory the caches were first written in, most likely from FX graph cache entries
(they pickle kernels with their absolute source paths), which the capture no longer uses.
A compile they break is done again without them (`pipeline.model_job.capture_baseline`),
and the service keeps slots only where `KERNELOPT_COMPILE_CACHE=on`.
"""
from __future__ import annotations

import errno
import os
import shutil
import stat
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from kernelopt.isolation.sandbox import give_to

# The scratch directory's cache folder (isolation.sandbox.SANDBOX_DIRS)
CACHE_DIR = ".cache"
DEFAULT_MAX_BYTES = 4 << 30


@dataclass(frozen=True)
class CacheSize:
    files: int
    bytes: int


def measure(path: Path) -> CacheSize:
    """Regular files under `path` and their apparent sizes, links not followed."""
    files = size = 0
    if not path.is_dir() or path.is_symlink():
        return CacheSize(0, 0)
    for _, _, names, dir_fd in os.fwalk(path, follow_symlinks=False):
        for name in names:
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISREG(st.st_mode):
                files, size = files + 1, size + st.st_size
    return CacheSize(files, size)


def sanitize(path: Path) -> None:
    """Delete every entry under `path` that is neither a regular file nor a directory (links, FIFOs, sockets)."""
    for _, dirs, names, dir_fd in os.fwalk(path, follow_symlinks=False):
        for name in dirs + names:
            try:
                mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
                if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                    os.unlink(name, dir_fd=dir_fd)
            except FileNotFoundError:
                pass


def lend(slot: Path, workdir: Path) -> CacheSize:
    """Move the slot's caches into `workdir` (created if need be) for a job; what was lent (0 files: none)."""
    dest = Path(workdir) / CACHE_DIR
    if dest.exists() or dest.is_symlink():  # a work directory reused: its own caches stay
        return measure(dest)
    Path(workdir).mkdir(parents=True, exist_ok=True)
    try:
        os.rename(slot, dest)
    except FileNotFoundError:  # no earlier job, or another job of the team holds the caches now
        return CacheSize(0, 0)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        shutil.move(str(slot), str(dest))
    return measure(dest)


def take_back(workdir: Path, slot: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> CacheSize:
    """Move the job's caches back into the slot, or drop them; what was kept (0 files: nothing).

    Dropped: a `.cache` that is a link or not a directory, a tree past `max_bytes`, and a
    job's caches when the slot was filled meanwhile (another job of the team returned first).
    """
    src = Path(workdir) / CACHE_DIR
    if src.is_symlink() or (src.exists() and not src.is_dir()):
        src.unlink()
        return CacheSize(0, 0)
    if not src.is_dir():
        return CacheSize(0, 0)
    sanitize(src)
    size = measure(src)
    if size.bytes > max_bytes or size.files == 0:
        shutil.rmtree(src, ignore_errors=True)
        return CacheSize(0, 0)
    slot.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(src, slot)
    except OSError as exc:
        if exc.errno != errno.EXDEV or slot.exists():
            # ENOTEMPTY/EEXIST: the slot was filled meanwhile (another job of the team returned first); keep that one
            shutil.rmtree(src, ignore_errors=True)
            return CacheSize(0, 0)
        shutil.move(str(src), str(slot))
    # the job's uid wrote it; a process of that uid left running must not write into the slot (as root only)
    give_to(slot, os.geteuid())
    return size


@contextmanager
def lent(slot: Path | None, workdir: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> Iterator[CacheSize]:
    """`lend` on entry and `take_back` on exit, also when the job raised; nothing where `slot` is None."""
    if slot is None:
        yield CacheSize(0, 0)
        return
    size = lend(slot, workdir)
    try:
        yield size
    finally:
        take_back(workdir, slot, max_bytes)
