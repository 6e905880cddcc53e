"""Appending to the files a job keeps in its work directory, which sandboxed children write to as well.

A child (submitted code, a generated kernel) can replace any name there by a symbolic link, a FIFO or a
directory. The trusted side never writes through one: every append opens the name itself (`O_NOFOLLOW`,
non-blocking, then checks it is a regular file) and refuses with `PlantedFile` otherwise, so no file outside
the job is created or grown with the job's uid, and the job ends saying why (pipeline/job.py).
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import TextIO

_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class PlantedFile(OSError):
    """Something other than a regular file where the job keeps one of its own files."""

    def __init__(self, path: Path, what: str):
        super().__init__(f"{path.name} in the job's work directory is {what}, not the job's file (a sandboxed "
                         "child put it there): the job never writes through it")


def open_append(path: str | os.PathLike) -> TextIO:
    """`path` opened for appending text, never through a link, a FIFO or anything but a regular file."""
    path = Path(path)
    try:
        fd = os.open(path, _FLAGS, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PlantedFile(path, "a symbolic link") from None
        if exc.errno in (errno.ENXIO, errno.EISDIR):
            raise PlantedFile(path, "a FIFO or a directory") from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise PlantedFile(path, "a FIFO, a device or a directory")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "a")


def append_text(path: str | os.PathLike, text: str) -> None:
    """Append `text` to `path` (see open_append)."""
    with open_append(path) as f:
        f.write(text)
