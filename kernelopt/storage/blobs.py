"""Content-addressed blob store on the filesystem.

A blob's name is the sha256 of its bytes, stored at root/ab/cd/<sha256>. Writes
go to a temp file (`root/.incoming-*`) and are published with os.replace, so a
reader never sees a partial blob and concurrent writers of the same content
simply replace identical bytes: putting a blob is idempotent. A temp file is
removed on every path out of a write (a `finally`), and `remove_stale_incoming`
sweeps the ones a killed process could not remove.

Reads that hand bytes to a user or to a job are **verified**: `open_verified`
hashes the whole blob before returning it (its name is the expected sha256, its
recorded size the expected size) and `copy_to` hashes while copying; a blob
altered on disk raises `BlobCorrupt` and is never passed on.
"""
from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
import tempfile
import time
from pathlib import Path
from typing import BinaryIO

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_CHUNK = 1024 * 1024
INCOMING_PREFIX = ".incoming-"


class BlobNotFound(FileNotFoundError):
    pass


class BlobCorrupt(Exception):
    """A stored blob's bytes no longer match its name (sha256) or its recorded size."""

    def __init__(self, sha256: str, problem: str):
        super().__init__(f"blob {sha256} is corrupt: {problem}")
        self.sha256, self.problem = sha256, problem


class BlobTooLarge(Exception):
    """A source had more bytes than the caller allowed (put_file's max_bytes); nothing was stored."""

    def __init__(self, limit: int):
        super().__init__(f"more than {limit} bytes")
        self.limit = limit


class BlobStore:
    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def path(self, sha256: str) -> Path:
        # Validating the name keeps user-influenced values from escaping the store.
        if not _SHA256.match(sha256 or ""):
            raise ValueError(f"not a sha256 hex digest: {sha256!r}")
        return self.root / sha256[:2] / sha256[2:4] / sha256

    def exists(self, sha256: str) -> bool:
        return self.path(sha256).is_file()

    def size(self, sha256: str) -> int:
        return self._existing(sha256).stat().st_size

    def open(self, sha256: str) -> BinaryIO:
        """The blob's bytes, NOT verified (internal use; see open_verified)."""
        return self._existing(sha256).open("rb")

    def read_bytes(self, sha256: str) -> bytes:
        return self._existing(sha256).read_bytes()

    def open_verified(self, sha256: str, size: int | None = None) -> BinaryIO:
        """An open handle on the blob, positioned at 0, whose bytes were just hashed and match.

        The whole blob is read once to check its size (`size`, when given, is the
        size recorded when it was stored) and its sha256; the caller then reads
        the same open file. Raises BlobCorrupt (nothing is returned) on a mismatch,
        BlobNotFound if it is gone.
        """
        f = self.open(sha256)
        try:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise BlobCorrupt(sha256, "not a regular file")
            if size is not None and st.st_size != size:
                raise BlobCorrupt(sha256, f"{st.st_size} bytes on disk, {size} recorded")
            digest, n = hashlib.sha256(), 0
            while chunk := f.read(_CHUNK):
                digest.update(chunk)
                n += len(chunk)
            if size is not None and n != size:
                raise BlobCorrupt(sha256, f"{n} bytes read, {size} recorded")
            if digest.hexdigest() != sha256:
                raise BlobCorrupt(sha256, f"content hashes to {digest.hexdigest()}")
            f.seek(0)
            return f
        except BaseException:
            f.close()
            raise

    def put_bytes(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        if not self.exists(sha):
            self._publish(sha, lambda f: f.write(data))
        return sha

    def put_file(self, src: str | os.PathLike | BinaryIO, max_bytes: int | None = None) -> str:
        """Store a file's content; hashes while copying, so the file is read once.

        `src` is a path or a binary file object open for reading (read from its
        current position). With `max_bytes`, a source that yields more bytes
        raises BlobTooLarge after reading at most max_bytes + 1 of them: a file
        that grows after its size was checked cannot push more into the store.
        The temp file is removed on every path out (also on exceptions).
        """
        digest = hashlib.sha256()
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=INCOMING_PREFIX, dir=self.root)
        try:
            with os.fdopen(fd, "wb") as out:
                if isinstance(src, (str, os.PathLike)):
                    with open(src, "rb") as inp:
                        self._copy(inp, out, digest, max_bytes)
                else:
                    self._copy(src, out, digest, max_bytes)
                out.flush()
                os.fsync(out.fileno())
            sha = digest.hexdigest()
            dest = self.path(sha)
            if not dest.is_file():
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(tmp, dest)  # same filesystem (tmp is under root), so atomic
            return sha
        finally:
            _unlink_quietly(tmp)  # already gone once published

    def copy_to(self, sha256: str, dest: str | os.PathLike, size: int | None = None) -> Path:
        """Copy a blob to `dest`, hashing while copying; BlobCorrupt (and no `dest`) on a mismatch.

        The bytes go to a temp file next to `dest` that is renamed only once its
        sha256 (and `size`, when given) matched: a job never reads tampered input.
        """
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        # Created like open(dest, "wb") would (0666 less the umask), not mkstemp's 0600.
        tmp = str(dest.parent / f"{INCOMING_PREFIX}{secrets.token_hex(8)}")
        out = os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), "wb")
        try:
            digest = hashlib.sha256()
            with out, self.open(sha256) as src:
                n = self._copy(src, out, digest, None)
            if size is not None and n != size:
                raise BlobCorrupt(sha256, f"{n} bytes read, {size} recorded")
            if digest.hexdigest() != sha256:
                raise BlobCorrupt(sha256, f"content hashes to {digest.hexdigest()}")
            os.replace(tmp, dest)
            return dest
        finally:
            _unlink_quietly(tmp)

    def remove_stale_incoming(self, older_than_s: float) -> int:
        """Remove temp files of writes that never finished (their process was killed); returns how many.

        A write in progress keeps its temp file fresh (mtime advances as it is
        written), so only files untouched for `older_than_s` are removed.
        """
        removed, cutoff = 0, time.time() - older_than_s
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return 0
        for e in entries:
            if e.name.startswith(INCOMING_PREFIX):
                try:
                    if e.stat(follow_symlinks=False).st_mtime < cutoff:
                        os.unlink(e.path)
                        removed += 1
                except FileNotFoundError:
                    pass
        return removed

    @staticmethod
    def _copy(inp: BinaryIO, out: BinaryIO, digest, max_bytes: int | None) -> int:
        n = 0
        want = _CHUNK if max_bytes is None else min(_CHUNK, max_bytes + 1)
        while chunk := inp.read(want):
            n += len(chunk)
            if max_bytes is not None and n > max_bytes:
                raise BlobTooLarge(max_bytes)
            digest.update(chunk)
            out.write(chunk)
            if max_bytes is not None:
                want = min(_CHUNK, max_bytes + 1 - n)
        return n

    def _existing(self, sha256: str) -> Path:
        p = self.path(sha256)
        if not p.is_file():
            raise BlobNotFound(f"no blob {sha256}")
        return p

    def _publish(self, sha: str, write) -> None:
        dest = self.path(sha)
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=INCOMING_PREFIX, dir=self.root)
        try:
            with os.fdopen(fd, "wb") as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, dest)
        finally:
            _unlink_quietly(tmp)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
