"""benchmarks/gemm_epilogue_fusion.py on the CPU: the plumbing of the measurement (the GPU decides its numbers).

On a CPU Inductor has no Triton GEMM template, so the `triton` variant cannot be built: the run records that
as the variant's error and goes on; the baseline is compiled as the engine compiles it, checked against
eager, timed and its launches counted.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBLEM = '''import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(64, 32)
    def forward(self, x):
        return torch.nn.functional.gelu(self.fc(x))
def get_inputs():
    return [torch.randn(16, 64)]
def get_init_inputs():
    return []
'''


def test_each_variant_is_a_row_compared_with_eager_and_timed_or_its_error(tmp_path):
    problem = tmp_path / "linear_gelu.py"
    problem.write_text(PROBLEM)
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "benchmarks/gemm_epilogue_fusion.py", "--device", "cpu", "--dtype", "fp32",
                           "--problems", str(problem), "--variants", "baseline,triton", "--rounds", "2",
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads((out / "gemm_epilogue_fusion.json").read_text())
    assert result["dtype"] == "fp32" and result["timer"] == "cpu-wallclock" and not result["errors"]
    [row] = result["rows"]
    base, triton = row["variants"]["baseline"], row["variants"]["triton"]
    assert base["allclose"] is True and base["max_abs_err_vs_eager"] < 1e-4 and base["ms"] > 0
    assert base["speedup_vs_baseline"] == 1.0 and base["library_calls"] >= 1  # the addmm, an ATen call on a CPU
    assert "No choices" in triton["error"] and "ms" not in triton  # no Triton GEMM on a CPU: said, not timed
    md = (out / "gemm_epilogue_fusion.md").read_text()
    assert "| linear_gelu | baseline |" in md and "| linear_gelu | triton | failed: " in md
    assert all(line.count("|") == 11 for line in md.splitlines() if line.startswith("| linear_gelu"))


def test_variants_must_include_the_baseline(tmp_path):
    proc = subprocess.run([sys.executable, "benchmarks/gemm_epilogue_fusion.py", "--device", "cpu", "--variants",
                           "triton", "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--variants must name baseline" in proc.stderr


def test_timing_a_variant_runs_the_code_compiled_and_counted_for_it(tmp_path):
    # Timing one variant after compiling the next must not compile it again (a second autotuning could pick
    # another kernel than the one counted): no Dynamo reset between variants, each guarded on its backend.
    import torch
    from torch._dynamo.utils import counters

    from benchmarks.gemm_epilogue_fusion import compile_variant
    from kernelopt.load.problem import build_model, import_problem, make_inputs

    problem = tmp_path / "linear_gelu.py"
    problem.write_text(PROBLEM)
    mod = import_problem(problem, module_name="gef_test_problem")
    model = build_model(mod, "cpu", torch.float32)
    inputs = make_inputs(mod, seed=0, device="cpu", dtype=torch.float32)
    torch._dynamo.reset()
    first, _, found = compile_variant(model, inputs, {})
    second, _, _ = compile_variant(model, inputs, {"coordinate_descent_tuning": False})
    assert found["library_calls"] >= 1
    counters.clear()
    with torch.no_grad():
        for compiled in (first, second, first, second):
            compiled(*inputs)
    assert not counters["stats"].get("unique_graphs"), dict(counters["stats"])


def test_problems_past_the_budget_are_listed_as_not_run(tmp_path):
    problem = tmp_path / "linear_gelu.py"
    problem.write_text(PROBLEM)
    proc = subprocess.run([sys.executable, "benchmarks/gemm_epilogue_fusion.py", "--device", "cpu", "--dtype", "fp32",
                           "--problems", str(problem), str(problem), "--budget-s", "0", "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # nothing measured
    result = json.loads((tmp_path / "gemm_epilogue_fusion.json").read_text())
    assert result["rows"] == [] and result["errors"] == ["not run (--budget-s 0 spent): linear_gelu, linear_gelu"]
    assert "Problems that did not run: not run (--budget-s 0 spent)" in (tmp_path / "gemm_epilogue_fusion.md").read_text()
