"""Gate 1: the candidate imports, compiles and completes one launch; crashes stay in the child."""
from __future__ import annotations

import time

import pytest
import torch

from kernelopt.compiled.kernel_io import KernelIO
from kernelopt.verify.gate1_static import check_static, check_static_in_child
from tests.kernels import source

N = 1000


def pointwise_io(device: str) -> KernelIO:
    x = torch.randn(N, generator=torch.Generator().manual_seed(0)).to(device)
    return KernelIO("pointwise", [x, torch.full((N,), -7.0, device=device), N], [x, x * 2 + 1, N])


def child_env() -> dict | None:
    return None if torch.cuda.is_available() else {"TRITON_INTERPRET": "1"}


def test_a_correct_kernel_passes_and_leaves_the_recording_untouched(device):
    io = pointwise_io(device)
    r = check_static(source("pointwise_ref"), io)
    assert r.passed and r.gate == "gate1", r.message
    assert bool((io.before[1] == -7.0).all())  # the launch ran on copies


def test_a_syntax_error_names_the_line():
    r = check_static("import triton\n\ndef run(*args, stream=None:\n    pass\n", pointwise_io("cpu"))
    assert not r.passed and r.metrics["stage"] == "import"
    assert "SyntaxError" in r.message and "candidate line 3" in r.message


def test_a_compile_error_names_the_kernel_line(device):
    r = check_static(source("compile_error"), pointwise_io(device))
    assert not r.passed and r.metrics["stage"] == "launch"
    assert "fancy_gelu" in r.message and "the dry-run launch failed" in r.message
    assert "candidate line 15, in run" in r.message


def test_a_module_without_run_is_rejected():
    r = check_static("X = 1\n", pointwise_io("cpu"))
    assert not r.passed and "no run(*args, stream=None)" in r.message


def test_in_a_child_from_a_file(tmp_path, device):
    path = tmp_path / "io.pt"
    torch.save([pointwise_io(device)], path)
    r = check_static_in_child(source("pointwise_ref"), str(path), timeout_s=60, env=child_env())
    assert r.passed, r.message


def test_a_crash_fails_the_gate_instead_of_raising():
    r = check_static_in_child(source("crashes_process"), pointwise_io("cpu"), timeout_s=60, env=child_env())
    assert not r.passed and r.gate == "gate1" and r.metrics["stage"] == "crash"
    assert "crashed the process (illegal memory access?)" in r.message and "exit code 134" in r.message


def test_a_hang_times_out():
    start = time.monotonic()
    r = check_static_in_child(source("hangs"), pointwise_io("cpu"), timeout_s=4, env=child_env())
    assert not r.passed and r.metrics["stage"] == "timeout" and "did not finish within 4 s" in r.message
    assert time.monotonic() - start < 9


@pytest.mark.gpu
def test_an_illegal_memory_access_fails_the_gate_in_the_child(tmp_path):
    path = tmp_path / "io.pt"
    torch.save([pointwise_io("cuda")], path)
    r = check_static_in_child(source("illegal_address"), str(path), timeout_s=120)
    assert not r.passed and r.metrics["stage"] in ("launch", "crash"), r.message
    assert "illegal memory access" in r.message or "crashed" in r.message


def test_a_candidate_that_creates_or_switches_streams_is_refused_before_it_runs():
    from kernelopt.verify.gate1_source import static_refusal

    for cheat in ("import torch\ns = torch.cuda.Stream()\n",
                  "import torch\nwith torch.cuda.stream(torch.cuda.Stream()):\n    pass\n",
                  "from torch.cuda import set_stream\nset_stream(None)\n",
                  "import torch\ntorch.cuda.current_stream().wait_stream(other)\n",
                  "s = __import__('torch').cuda.Stream()\n"):  # a chain on a call: its attributes still count
        why = static_refusal(cheat)
        assert why is not None and "CUDA stream" in why, cheat
    # Inductor's kernels launch on the current stream they are given: allowed
    inductor = ("from torch._C import _cuda_getCurrentRawStream as get_raw_stream\n"
                "def call(args):\n    stream0 = get_raw_stream(0)\n    k.run(a, b, stream=stream0)\n")
    assert static_refusal(inductor) is None
    assert static_refusal("def f(:\n") is None  # the import reports a syntax error, with its line
