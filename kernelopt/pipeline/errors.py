"""Errors in what a user gave a command: reported as one line, before anything is created.

An `InputError` means no job can start from the input (a missing file, a directory
where a file is expected, an empty problem directory, an optimized module that does
not belong to the problem). The CLI prints its message on stderr and exits 2; it
never reaches the user as a traceback. A submission that exists but cannot run is
not an input error: that is a job with outcome `failed` and a report.
"""
from __future__ import annotations

from pathlib import Path


class InputError(Exception):
    """The input of a command is unusable; the message is the one line the user sees."""

    exit_code = 2  # the command's exit status (2, as for argparse's usage errors)


def require_file(path: str | Path, what: str) -> Path:
    """`path` as a readable regular file, or InputError naming `what` it should have been."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{what} {p} is a directory, not a file")
    if not p.exists():
        raise InputError(f"{what} {p} does not exist")
    if not p.is_file():
        raise InputError(f"{what} {p} is not a regular file")
    try:
        with open(p, "rb"):
            pass
    except OSError as exc:
        raise InputError(f"{what} {p} cannot be read: {exc.strerror or exc}") from None
    return p
