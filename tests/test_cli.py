"""The `kernelopt` command as a user runs it, in real processes, without a GPU."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import HAS_CUDA

REPO = Path(__file__).resolve().parent.parent
KERNEL = REPO / "benchmarks" / "kernels" / "add_relu_kernel.py"

pytestmark = pytest.mark.skipif(HAS_CUDA, reason="checks the behaviour on a machine without a GPU")


def kernelopt(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("TRITON_INTERPRET", None)  # the command decides that for its children
    return subprocess.run([sys.executable, "-m", "cli.main", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_optimize_without_a_problem_says_what_it_needs_and_runs_the_kernel_default(tmp_path):
    proc = kernelopt("optimize", "--workdir", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "needs a CUDA GPU" in proc.stdout
    assert "Triton interpreter" in proc.stdout
    assert "outcome: fallback — no-gpu" in proc.stdout
    assert "speed: not measured" in proc.stdout and "speedup vs compiler baseline" not in proc.stdout
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["load"]["kind"] == "kernel"
    assert report["result"]["outcome"] == "fallback"
    assert (tmp_path / "run" / "optimized_module.py").read_text() == \
        (REPO / "benchmarks" / "kernels" / "row_softmax_kernel.py").read_text()


def test_optimize_model_file_without_gpu_fails_with_the_reason(tmp_path):
    proc = kernelopt("optimize", "tests/testdata/problems/linear_gelu.py", "--workdir", str(tmp_path), "--json")
    assert proc.returncode == 1
    result = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert result["outcome"] == "failed"
    assert "model mode needs a CUDA GPU" in result["cause"]


def test_optimize_bad_file_fails_with_its_message(tmp_path):
    proc = kernelopt("optimize", "tests/testdata/bad/import_error.py", "--workdir", str(tmp_path), "--json")
    assert proc.returncode == 1
    result = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert "failed to import: ModuleNotFoundError" in result["cause"]
    assert (tmp_path / "report.json").exists()


def test_check_passes_a_correct_kernel_file_and_fails_a_wrong_one():
    ok = kernelopt("check", str(KERNEL), str(KERNEL))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "PASS: 5/5 fresh seeds" in ok.stdout
    bad = kernelopt("check", "tests/testdata/bad/add_relu_wrong.py", str(KERNEL))
    assert bad.returncode == 1
    assert "FAIL: 0/5" in bad.stdout


def test_bench_reports_outcomes_and_causes(tmp_path):
    proc = kernelopt("bench", "benchmarks/kernels", "--only", "add_relu", "--out", str(tmp_path), "--time-limit", "300")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "bench.json").read_text())
    assert summary["outcomes"] == {"fallback": 1}
    assert summary["causes"] == {"no-gpu": 1}
    assert summary["regressions"] == 0 and summary["wrong_answers"] == 0
    assert summary["geomean"]["all"] == 1.0
    assert "Geomean speedup" in (tmp_path / "bench.md").read_text()
    assert "stage s (L/C/P/S/V)" in (tmp_path / "bench.md").read_text()

    # A resumed bench keeps the finished rows and runs nothing twice.
    events = tmp_path / "all" / "add_relu_kernel" / "events.jsonl"
    before = events.read_text()
    again = kernelopt("bench", "benchmarks/kernels", "--only", "add_relu", "--out", str(tmp_path), "--resume")
    assert again.returncode == 0, again.stdout + again.stderr
    resumed = json.loads((tmp_path / "bench.json").read_text())
    assert [r["problem"] for r in resumed["rows"]] == [r["problem"] for r in summary["rows"]]
    assert events.read_text() == before
