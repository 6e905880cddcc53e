"""Test-session setup shared by every test.

Without a GPU, Triton kernels run on the interpreter: TRITON_INTERPRET must be
set before any `@triton.jit` runs, so it is set here, at import time.
GPU tests are marked `gpu`: skipped without CUDA, selected with `--gpu`.
"""
from __future__ import annotations

import os

import pytest


def _cuda_available() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


HAS_CUDA = _cuda_available()
if not HAS_CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")

DEVICE = "cuda" if HAS_CUDA else "cpu"


def pytest_addoption(parser):
    parser.addoption("--gpu", action="store_true", help="run only the tests marked gpu (needs CUDA)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--gpu"):
        if not HAS_CUDA:
            raise pytest.UsageError("--gpu needs a CUDA GPU; none is visible")
        items[:] = [i for i in items if "gpu" in i.keywords]
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run with --gpu on a GPU machine)")
    for item in items:
        if "gpu" in item.keywords and not HAS_CUDA:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def device() -> str:
    return DEVICE
