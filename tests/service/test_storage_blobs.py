"""The content-addressed blob store."""
from __future__ import annotations

import hashlib
import os
import threading

import pytest

from storage.blobs import BlobNotFound, BlobStore


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
