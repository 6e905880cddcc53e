"""Errors in what a user gave a command: reported as one line, before anything is created.

An `InputError` means no job can start from the input (a missing file, a directory
where a file is expected, an empty problem directory, an optimized module that does
not belong to the problem). The CLI prints its message on stderr and exits 2; it
never reaches the user as a traceback. A submission that exists but cannot run is
not an input error: that is a job with outcome `failed` and a report.
"""
from __future__ import annotations

import os
import tempfile
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


def require_output_dir(path: str | Path, what: str, markers: tuple[str, ...]) -> Path:
    """`path` as a directory a command may write its artifacts into (created here if need be), or InputError.

    The rule: a new directory, an empty one, or one an earlier run of the command wrote (it holds one of
    `markers`). A directory holding anything else (a source folder, someone's notes) is refused rather
    than written into; so is one that cannot be created or written. `what` names the option in the line.
    """
    p = Path(path)
    if p.is_dir():
        try:
            names = sorted(os.listdir(p))
        except OSError as exc:
            raise InputError(f"{what} {p} cannot be read: {exc.strerror or exc}") from None
        if names and not set(names) & set(markers):
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            raise InputError(f"{what} {p} already holds files no kernelopt run wrote ({shown}); give a new or "
                             f"empty directory, or one of an earlier run (it holds {' or '.join(markers)})")
        created: list[Path] = []
    else:
        if p.exists() or p.is_symlink():
            raise InputError(f"{what} {p} is not a directory")
        created = [d for d in [p, *p.absolute().parents] if not d.exists()]
        parent = next((d for d in p.absolute().parents if d.exists()), None)
        if parent is not None and not parent.is_dir():
            raise InputError(f"{what} {p} cannot be created: {parent} is a file, not a directory")
        try:
            p.mkdir(parents=True)
        except OSError as exc:
            _remove_dirs(created)
            raise InputError(f"{what} {p} cannot be created: {exc.strerror or exc}") from None
    try:
        with tempfile.TemporaryFile(dir=p):
            pass
    except OSError as exc:
        _remove_dirs(created)
        raise InputError(f"{what} {p} is not writable: {exc.strerror or exc}") from None
    return p


def _remove_dirs(dirs: list[Path]) -> None:
    """Remove the (empty) directories a refused command created, deepest first."""
    for d in dirs:
        try:
            d.rmdir()
        except OSError:
            pass
