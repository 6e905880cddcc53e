"""Compile variants (compiled/variants.py, pipeline/compile_variants.py): the whole model compiled again with one
Inductor option changed, as a whole-model candidate through Gates 2-4."""
import json
from pathlib import Path

import pytest
import torch

from kernelopt.compiled.variants import VARIANTS, _code, applicable, variant_by_name
from kernelopt.load.stage import LoadRequest, load_problem
from kernelopt.pipeline.bench import _stage_cell
from kernelopt.pipeline.context import JobContext
from kernelopt.pipeline.device import DeviceInfo
from kernelopt.pipeline.model_job import run_model_job
from kernelopt.pipeline.options import JobOptions
from kernelopt.pipeline.report import variant_lines
from kernelopt.search.registry import GENERATORS

PROBLEMS = Path(__file__).parent / "testdata" / "problems"
SUITE = Path(__file__).resolve().parent.parent / "benchmarks" / "problems"


def test_a_variant_applies_where_the_module_calls_what_it_changes_on_the_device_it_changes():
    nchw = variant_by_name("nchw_convolutions")
    assert applicable({"convolution", "addmm"}, "cuda") == [nchw]
    assert applicable({"addmm", "mm"}, "cuda") == []  # no convolution: layout optimization changes nothing
    assert applicable({"convolution"}, "cpu") == [nchw]
    assert applicable({"convolution"}, "mps", VARIANTS) == []  # only where it is known to change the code
    assert dict(nchw.options) == {"layout_optimization": False}
    with pytest.raises(ValueError, match="no compile variant named 'bogus'"):
        variant_by_name("bogus")
    # one source of truth: the registry's entry names the variants' module, and every variant says what it touches
    assert GENERATORS["compile_variants"].targets == ("graph",)
    assert GENERATORS["compile_variants"].factory == "kernelopt.compiled.variants:VARIANTS"
    assert all(v.touches and v.calls and v.devices for v in VARIANTS)


def test_a_convolution_model_compiled_on_nchw_tensors_passes_gates_1_to_3_on_the_cpu_without_a_speed(tmp_path):
    # on the CPU too, Inductor's layout optimization converts the convolution's input to channels-last: the
    # variant compiles other code, and takes Gates 2-3 (no speed is claimed without a GPU)
    problem = PROBLEMS / "conv_bn_relu.py"
    ctx = JobContext(str(problem), tmp_path, JobOptions(time_budget_s=600, generators=["compile_variants"]))
    ctx.device = DeviceInfo(cuda=False, name="cpu", count=0, torch_version=torch.__version__, triton_version="",
                            ncu=False)
    try:
        result = run_model_job(ctx, load_problem(LoadRequest(str(problem), device="cpu")))
    finally:
        ctx.close()
    [row] = ctx.report["compile_variants"]
    assert row["variant"] == "nchw_convolutions" and "to other code than the baseline's" in row["note"], row
    assert row["gate2"].passed and "screen_speedup" not in row["gate2"].metrics  # no screen without a GPU
    assert row["gate3"].passed, row["gate3"]
    assert row["verdict"].startswith("Gates 1-3 passed") and row["verdict"].endswith(
        "Gate 4 not run: no GPU, no speed is measured"), row["verdict"]
    assert result.outcome != "optimized" and result.speedup == 1.0
    baseline = (tmp_path / "baseline_module.py").read_text()
    variant = (tmp_path / "variant-nchw_convolutions" / "baseline_module.py").read_text()
    assert _code(variant) != _code(baseline)


def test_a_variant_the_budget_cannot_hold_is_not_tried_and_the_report_says_why(tmp_path):
    problem = PROBLEMS / "conv_bn_relu.py"
    ctx = JobContext(str(problem), tmp_path, JobOptions(time_budget_s=90, generators=["compile_variants"]))
    ctx.device = DeviceInfo(cuda=False, name="cpu", count=0, torch_version=torch.__version__, triton_version="",
                            ncu=False)
    try:
        run_model_job(ctx, load_problem(LoadRequest(str(problem), device="cpu")))
    finally:
        ctx.close()
    [row] = ctx.report["compile_variants"]
    assert row["verdict"].startswith("not tried: a compile and verification of this model are expected to take "), row
    assert "more than 60% of the" in row["verdict"] and "compile_seconds" not in row, row
    assert not (tmp_path / "variant-nchw_convolutions").exists()


def test_comments_do_not_make_two_modules_differ():
    assert _code("x = 1  # /tmp/a\n\n# kernel path: /tmp/b\ny = 2\n") == _code("x = 1 # other\ny = 2")
    assert _code("x = 1\n") != _code("x = 2\n")


def test_the_report_and_the_bench_show_each_variant_and_its_stage_time():
    rows = [{"variant": "nchw_convolutions", "options": {"layout_optimization": False}, "compile_seconds": 21.5,
             "verdict": "Gate 2 passed; screened at 0.870x against the baseline in Gate 2's child (below 1.05): "
                        "not sent to Gates 3-4"},
            {"variant": "other", "options": {"x": 1}, "verdict": "not tried: 12 s left | budget"}]
    text = "\n".join(variant_lines(rows))
    assert "## Compile variants" in text
    assert "| nchw_convolutions | `layout_optimization=False` | 21.5 | Gate 2 passed; screened at 0.870x" in text
    assert "| other | `x=1` | - | not tried: 12 s left / budget |" in text  # a pipe in a verdict never splits a row
    assert variant_lines(None) == [] and variant_lines([]) == []
    assert _stage_cell({"load": 1, "compile": 20, "variants": 33, "verify": 9}) == "1/20/-/33/-/-/9"


@pytest.mark.gpu
def test_a_convolution_model_compiled_on_nchw_tensors_goes_through_the_gates(tmp_path):
    """Suite level2/04 (a convolution, GroupNorm and a mean), where layout_optimization=False ran 1.123x faster on
    an H200 (benchmarks/results/2026-12-04-h200-conv-inductor-variants): the variant is compiled to other code
    than the baseline's and takes the gates; deployed only with Gate 4's verdict, and then `check` passes."""
    from kernelopt.pipeline.check import CheckRequest, run_check
    from kernelopt.pipeline.job import run_job
    from kernelopt.pipeline.options import JobOptions

    problem = SUITE / "level2" / "04_conv_groupnorm_mean.py"
    result = run_job(str(problem), tmp_path, JobOptions(time_budget_s=300, generators=["compile_variants"]))
    report = json.loads((tmp_path / "report.json").read_text())
    [row] = report["compile_variants"]
    assert row["variant"] == "nchw_convolutions" and row["compile_seconds"] > 0, row
    assert "to other code than the baseline's" in row["note"], row
    assert row["gate2"]["passed"] and row["gate2"]["metrics"]["screen_speedup"] > 0, row
    if result.outcome == "optimized":
        assert row["verdict"] == "deployed" and row["gate4"]["passed"], row
        assert "nchw_convolutions" in result.cause and result.speedup >= 1.05
        check = run_check(CheckRequest(str(tmp_path / "optimized_module.py"), str(problem)))
        assert check["passed"], check["summary"]
    else:
        assert row["verdict"].startswith(("Gate 2 passed; screened at", "Gates 1-3 passed; Gate 4 failed")), row
