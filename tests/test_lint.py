"""ruff (pyflakes and pycodestyle's error classes) on the whole tree, mypy on the typed modules.

Both are configured in pyproject.toml, so `ruff check` and `mypy` at the root run exactly this.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing():
    pytest.importorskip("ruff")
    proc = _run("ruff", "check", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_finds_nothing_in_the_typed_modules():
    pytest.importorskip("mypy")
    proc = _run("mypy")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success" in proc.stdout
