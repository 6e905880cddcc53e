"""Content-addressed blob store on the filesystem.

A blob's name is the sha256 of its bytes, stored at root/ab/cd/<sha256>. Writes
go to a temp file in the same directory and are published with os.replace, so a
reader never sees a partial blob and concurrent writers of the same content
simply replace identical bytes: putting a blob is idempotent.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import BinaryIO

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_CHUNK = 1024 * 1024


class BlobNotFound(FileNotFoundError):
    pass


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
        return self._existing(sha256).open("rb")

    def read_bytes(self, sha256: str) -> bytes:
        return self._existing(sha256).read_bytes()

    def put_bytes(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        if not self.exists(sha):
            self._publish(sha, lambda f: f.write(data))
        return sha

    def put_file(self, src: str | os.PathLike) -> str:
        """Store a file's content; hashes while copying, so the file is read once."""
        digest = hashlib.sha256()
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".incoming-", dir=self.root)
        try:
            with os.fdopen(fd, "wb") as out, open(src, "rb") as inp:
                while chunk := inp.read(_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            sha = digest.hexdigest()
            dest = self.path(sha)
            if dest.is_file():
                os.unlink(tmp)
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(tmp, dest)  # same filesystem (tmp is under root), so atomic
            return sha
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def copy_to(self, sha256: str, dest: str | os.PathLike) -> Path:
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        with self.open(sha256) as src, dest.open("wb") as out:
            shutil.copyfileobj(src, out, _CHUNK)
        return dest

    def _existing(self, sha256: str) -> Path:
        p = self.path(sha256)
        if not p.is_file():
            raise BlobNotFound(f"no blob {sha256}")
        return p

    def _publish(self, sha: str, write) -> None:
        dest = self.path(sha)
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".incoming-", dir=dest.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, dest)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
