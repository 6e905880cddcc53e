"""Which engine produced a result: a fingerprint of the engine's source, recorded per bench row.

A bench stopped and resumed (`kernelopt bench --resume`, e.g. over several device sessions)
mixes rows from more than one run; the rows are comparable only if the same engine ran
them. A git commit cannot say that: a bench runs from a working tree or an installed wheel,
with or without a `.git`, so the fingerprint is the engine's own source, hashed.
"""
from __future__ import annotations

import hashlib
import importlib
from functools import lru_cache
from pathlib import Path

from kernelopt.core.layout import ENGINE_PACKAGES  # whose code decides an outcome or a timing


@lru_cache(maxsize=1)
def engine_fingerprint() -> str:
    """12 hex digits of the SHA-256 over every .py file of ENGINE_PACKAGES (path relative to its package,
    then contents), in sorted order: the same for the same engine source, wherever it is installed."""
    digest = hashlib.sha256()
    for name in ENGINE_PACKAGES:
        root = Path(str(importlib.import_module(f"kernelopt.{name}").__file__)).resolve().parent
        for path in sorted(root.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            digest.update(f"{name}/{path.relative_to(root).as_posix()}\0".encode())
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()[:12]
