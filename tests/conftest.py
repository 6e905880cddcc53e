"""Test-session setup shared by every test.

Without a GPU, Triton kernels run on the interpreter: TRITON_INTERPRET must be
set before any `@triton.jit` runs, so it is set here, at import time.
GPU tests are marked `gpu`: skipped without CUDA, selected with `--gpu`.
"""
from __future__ import annotations

import os
from pathlib import Path

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
    # One thread per process (children inherit it; Inductor then compiles its C++ kernels single-threaded): the
    # suite runs three workers, each with its children, on two cores, where OpenMP's barriers made a 0.01 ms call
    # take 10 ms whenever a thread waited for a core — CPU timings went bimodal and one Gate 4 test ran 115 s.
    os.environ.setdefault("OMP_NUM_THREADS", "1")

DEVICE = "cuda" if HAS_CUDA else "cpu"


def pytest_configure(config):
    # A base directory of this session's own: pytest's shared /tmp/pytest-of-<user> is made 0700
    # again by every session that starts, which would cut the jobs' uids off (see below).
    if not config.option.basetemp and not hasattr(config, "workerinput"):
        import tempfile

        config.option.basetemp = tempfile.mkdtemp(prefix="kernelopt-pytest-")
        config._kernelopt_basetemp = config.option.basetemp


def pytest_unconfigure(config):
    import shutil

    base = getattr(config, "_kernelopt_basetemp", None)
    if base and getattr(config, "_kernelopt_passed", False):
        shutil.rmtree(base, ignore_errors=True)


def pytest_sessionfinish(session, exitstatus):
    session.config._kernelopt_passed = exitstatus == 0


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


@pytest.fixture(scope="session", autouse=True)
def _sandbox_uids_reach_the_test_directories(tmp_path_factory):
    """What docs/operations.md asks of an operator: the jobs' uids can traverse to their directories.

    pytest makes its base directory 0700; a job's orchestrator, running as the
    job's own uid, would not reach a data directory below it.
    """
    base = tmp_path_factory.getbasetemp()
    for d in [base, *base.parents]:
        if d != d.parent and os.stat(d).st_uid == os.geteuid():
            os.chmod(d, os.stat(d).st_mode | 0o001)


@pytest.fixture
def tmp_path(tmp_path):
    """pytest's tmp_path, traversable by the jobs' uids (see above)."""
    os.chmod(tmp_path, 0o711)
    for d in tmp_path.parents:
        if d == d.parent or os.stat(d).st_uid != os.geteuid():
            break
        os.chmod(d, os.stat(d).st_mode | 0o001)
    return tmp_path


@pytest.fixture(scope="session")
def cpu_capture(tmp_path_factory):
    """`cpu_capture(name, dtype="fp32", device="cpu", env=None)`: tests/testdata/problems/<name>.py compiled by Inductor on
    this machine (the capture's work directory, made once per session); `device="cuda"` on a GPU machine.

    Tests that *run* a CPU output module use this, not tests/testdata/captured_cpu: Inductor's C++ kernels
    are compiled for the capturing machine's vector width, and the stored ones (AVX-512) leave part of
    their output unwritten on an AVX2 machine. Tests that only parse a module may read the stored ones.
    """
    from kernelopt.compiled.capture import CaptureRequest, capture_model
    from kernelopt.isolation import run_in_child

    made: dict = {}

    def capture(name: str, dtype: str = "fp32", device: str = "cpu", env: dict | None = None):
        key = (name, dtype, device, tuple(sorted((env or {}).items())))
        if key not in made:
            workdir = tmp_path_factory.mktemp(f"{name}_{dtype}_{device}")
            os.chmod(workdir, 0o711)
            problem = Path(__file__).parent / "testdata" / "problems" / f"{name}.py"
            child_env = {**({"TRITON_INTERPRET": "1"} if device == "cpu" else {}), **(env or {})}
            cg = run_in_child(capture_model, CaptureRequest(str(problem), str(workdir), dtype=dtype, device=device),
                              timeout_s=600, scratch=workdir, env=child_env, read_only=[problem])
            assert cg.restitch_bit_exact is True
            made[key] = workdir
        return made[key]

    return capture
