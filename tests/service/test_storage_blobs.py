"""The content-addressed blob store."""
from __future__ import annotations

import hashlib
import os
import threading

import pytest

from kernelopt.storage.blobs import BlobNotFound, BlobStore


def test_put_bytes_is_content_addressed_and_idempotent(tmp_path):
    store = BlobStore(tmp_path / "blobs")
    data = b"def kernel(): pass\n"
    sha = store.put_bytes(data)
    assert sha == hashlib.sha256(data).hexdigest()
    p = store.path(sha)
    assert p == tmp_path / "blobs" / sha[:2] / sha[2:4] / sha
    assert store.exists(sha) and store.read_bytes(sha) == data and store.size(sha) == len(data)
    mtime = p.stat().st_mtime_ns
    assert store.put_bytes(data) == sha  # same content, same name, not rewritten
    assert p.stat().st_mtime_ns == mtime
    other = store.put_bytes(data + b"#")
    assert other != sha and store.read_bytes(other) == data + b"#"
    with store.open(sha) as f:
        assert f.read() == data
    # No temp files are left behind.
    assert not [n for _, _, files in os.walk(store.root) for n in files if n.startswith(".incoming-")]


def test_put_file_streams_large_files_and_copy_to(tmp_path):
    store = BlobStore(tmp_path / "blobs")
    src = tmp_path / "big.bin"
    data = os.urandom(3 * 1024 * 1024 + 17)  # more than one copy chunk
    src.write_bytes(data)
    sha = store.put_file(src)
    assert sha == hashlib.sha256(data).hexdigest() and store.read_bytes(sha) == data
    assert store.put_file(src) == sha
    out = store.copy_to(sha, tmp_path / "out" / "x.bin")
    assert out.read_bytes() == data
    assert not [n for n in os.listdir(store.root) if n.startswith(".incoming-")]


def test_missing_and_malicious_names(tmp_path):
    store = BlobStore(tmp_path / "blobs")
    missing = "0" * 64
    assert not store.exists(missing)
    with pytest.raises(BlobNotFound):
        store.open(missing)
    for bad in ("../../etc/passwd", "A" * 64, "abc", ""):
        with pytest.raises(ValueError):
            store.path(bad)


def test_concurrent_writers_of_the_same_content(tmp_path):
    store = BlobStore(tmp_path / "blobs")
    data = os.urandom(256 * 1024)
    results, errors = [], []

    def put():
        try:
            results.append(store.put_bytes(data))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=put) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and set(results) == {hashlib.sha256(data).hexdigest()}
    assert store.read_bytes(results[0]) == data


# ---------------------------------------------------------------- temp files on failure paths

class _FailingReader:
    """A source that yields one chunk and then fails, like a disk error half-way through a read."""

    def __init__(self, exc: BaseException):
        self.exc, self.calls = exc, 0

    def read(self, n: int = -1) -> bytes:
        self.calls += 1
        if self.calls == 1:
            return b"x" * min(n, 4096)
        raise self.exc


def _incoming(store: BlobStore) -> list[str]:
    return [n for _, _, files in os.walk(store.root) for n in files if n.startswith(".incoming-")]


@pytest.mark.parametrize("exc", [OSError(5, "Input/output error"), KeyboardInterrupt()])
def test_no_incoming_file_remains_after_a_failed_put(tmp_path, exc):
    store = BlobStore(tmp_path / "blobs")
    with pytest.raises(type(exc)):
        store.put_file(_FailingReader(exc))
    assert _incoming(store) == []
    with pytest.raises(IsADirectoryError):
        store.put_file(tmp_path)
    with pytest.raises(FileNotFoundError):
        store.put_file(tmp_path / "missing")
    assert _incoming(store) == []


def test_no_incoming_file_remains_when_publishing_fails(tmp_path):
    store = BlobStore(tmp_path / "blobs")
    data = b"the content"
    sha = hashlib.sha256(data).hexdigest()
    store.root.mkdir(parents=True)
    (store.root / sha[:2]).write_bytes(b"")  # a file where the blob's directory must go
    src = tmp_path / "src"
    src.write_bytes(data)
    with pytest.raises(OSError):
        store.put_file(src)
    with pytest.raises(OSError):
        store.put_bytes(data)
    assert _incoming(store) == []


def test_put_file_reads_at_most_max_bytes(tmp_path):
    from kernelopt.storage.blobs import BlobTooLarge

    store = BlobStore(tmp_path / "blobs")
    src = tmp_path / "grown"
    src.write_bytes(b"a" * (2 * 1024 * 1024 + 1))
    with pytest.raises(BlobTooLarge):
        store.put_file(src, max_bytes=2 * 1024 * 1024)
    assert _incoming(store) == [] and not [p for p in store.root.rglob("*") if p.is_file()]
    exact = store.put_file(src, max_bytes=src.stat().st_size)
    assert store.read_bytes(exact) == src.read_bytes()
    with open(src, "rb") as f:  # a file object works too
        assert store.put_file(f, max_bytes=src.stat().st_size) == exact


# ---------------------------------------------------------------- verified reads

def _tamper_same_size(path) -> None:
    os.chmod(path, 0o644)
    data = bytearray(path.read_bytes())
    data[0] ^= 0xFF
    path.write_bytes(bytes(data))


def test_open_verified_refuses_a_blob_altered_on_disk(tmp_path):
    from kernelopt.storage.blobs import BlobCorrupt

    store = BlobStore(tmp_path / "blobs")
    data = os.urandom(3 * 1024 * 1024 + 5)
    sha = store.put_bytes(data)
    with store.open_verified(sha, len(data)) as f:
        assert f.read() == data
    with store.open_verified(sha) as f:  # size unknown: the hash alone
        assert f.read() == data

    _tamper_same_size(store.path(sha))
    with pytest.raises(BlobCorrupt, match="hashes to"):
        store.open_verified(sha, len(data))
    with pytest.raises(BlobCorrupt, match="hashes to"):
        store.open_verified(sha)

    other = store.put_bytes(b"report")
    with open(store.path(other), "ab") as f:  # appended to, as in issue 7
        f.write(b" -- and more")
    with pytest.raises(BlobCorrupt, match="recorded"):
        store.open_verified(other, len(b"report"))
    with pytest.raises(BlobNotFound):
        store.open_verified("0" * 64)


def test_copy_to_verifies_and_leaves_nothing_on_a_mismatch(tmp_path):
    from kernelopt.storage.blobs import BlobCorrupt

    store = BlobStore(tmp_path / "blobs")
    data = b"def get_inputs(): return []\n"
    sha = store.put_bytes(data)
    dest = tmp_path / "job" / "input" / "problem.py"
    assert store.copy_to(sha, dest, size=len(data)).read_bytes() == data
    umask = os.umask(0o022)
    os.umask(umask)
    assert dest.stat().st_mode & 0o777 == 0o666 & ~umask  # created like open(dest, "wb") would
    dest.unlink()
    _tamper_same_size(store.path(sha))
    with pytest.raises(BlobCorrupt):
        store.copy_to(sha, dest)
    assert not dest.exists() and os.listdir(dest.parent) == []
    with pytest.raises(BlobNotFound):
        store.copy_to("1" * 64, dest)
    assert os.listdir(dest.parent) == []
