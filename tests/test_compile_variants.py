"""Compile variants (compiled/variants.py, pipeline/compile_variants.py): the whole model compiled again with one
Inductor option changed, as a whole-model candidate through Gates 2-4."""
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kernelopt.compiled.decompose import KernelGraph, decompose
from kernelopt.compiled.group import ieee_convolution_templates
from kernelopt.compiled.variants import (
    VARIANTS,
    _code,
    applicable,
    conv_templates_tf32,
    templates_cover,
    variant_by_name,
)
from kernelopt.pipeline.bench import _stage_cell
from kernelopt.pipeline.options import JobOptions
from kernelopt.pipeline.report import variant_lines
from kernelopt.search.registry import GENERATORS
from kernelopt.verify.precision import strict_verdict, whole_graph_judged
from tests.cpu_job import cpu_model_job

ROOT = Path(__file__).resolve().parents[1]

PROBLEMS = Path(__file__).parent / "testdata" / "problems"
SUITE = Path(__file__).resolve().parent.parent / "benchmarks" / "problems"
CAPTURED = Path(__file__).parent / "testdata" / "captured"
CAPTURED_H200 = Path(__file__).parent / "testdata" / "captured_h200"


def _conv(dilation: str, *edits: tuple[str, str]) -> KernelGraph:
    """A module whose convolution is cuDNN's call (captured on an H200), with the given dilation and edits."""
    source = (CAPTURED_H200 / "03_conv_bn_relu" / "baseline_module.py").read_text()
    for old, new in (("dilation=(1, 1)", f"dilation={dilation}"), *edits):
        source = source.replace(old, new)
    return decompose(source)


def test_a_variant_applies_where_the_module_calls_what_it_changes_on_the_device_it_changes():
    nchw, tf32, fused = (variant_by_name(n) for n in ("nchw_convolutions", "tf32_conv_templates",
                                                      "fused_conv_templates"))
    tf32_on = {"cudnn.allow_tf32": True, "cuda.matmul.allow_tf32": False}
    assert applicable(_conv("(1, 1)"), "cuda", tf32_on) == [nchw, tf32, fused]
    # every convolution as a template only where Inductor has one for each: not for a dilated or transposed one
    assert applicable(_conv("(2, 2)"), "cuda", tf32_on) == [nchw, tf32]
    transposed = _conv("(1, 1)", ("transposed=False", "transposed=True"))
    assert applicable(transposed, "cuda", tf32_on) == [nchw, tf32]
    assert templates_cover(_conv("(1, 1, 1)", ("(0, 0)", "(0, 0, 0)")))
    assert not templates_cover(_conv("(1, 1)", ("output_padding=(0, 0)", "output_padding=(1, 1)")))
    gemm_only = decompose((CAPTURED / "linear_gelu" / "baseline_module.py").read_text())
    assert applicable(gemm_only, "cuda", tf32_on) == []  # no convolution: nothing these options change
    # TF32 templates only where the baseline's cuDNN convolutions ran TF32 (the capture's recorded mode)
    assert applicable(_conv("(1, 1)"), "cuda", {"cudnn.allow_tf32": False}) == [nchw]
    assert applicable(_conv("(1, 1)"), "cuda", {}) == [nchw]
    # on the CPU there are no Triton templates, but Inductor's layout optimization converts layouts there too
    assert applicable(_conv("(1, 1)"), "cpu", tf32_on) == [nchw]
    assert applicable(_conv("(1, 1)"), "mps", tf32_on) == []  # only where it is known to change the code
    assert dict(nchw.options) == {"layout_optimization": False}
    assert dict(fused.options) == {"max_autotune_conv_backends": "TRITON"} and fused.tf32_conv_templates
    with pytest.raises(ValueError, match="no compile variant named 'bogus'"):
        variant_by_name("bogus")
    # one source of truth: the registry's entry names the variants' module, and every variant says what it touches
    assert GENERATORS["compile_variants"].targets == ("graph",)
    assert GENERATORS["compile_variants"].factory == "kernelopt.compiled.variants:VARIANTS"
    assert all(v.touches and v.calls and v.devices for v in VARIANTS)


def test_the_tf32_template_flag_is_set_while_inductor_compiles_and_restored():
    # Inductor states its convolution templates' ALLOW_TF32 from cudnn.fp32_precision, which PyTorch leaves
    # "none" while cuDNN's convolutions run TF32 (cudnn.conv.fp32_precision "tf32"): the variant sets it
    before = torch.backends.cudnn.fp32_precision
    with conv_templates_tf32(True):
        assert torch.backends.cudnn.fp32_precision == "tf32"
    assert torch.backends.cudnn.fp32_precision == before
    with conv_templates_tf32(False):
        assert torch.backends.cudnn.fp32_precision == before


MATH_MODES_UNDER_THE_TF32_TEMPLATES = """
import torch
from kernelopt.compiled.variants import conv_templates_tf32
b = torch.backends
b.cudnn.allow_tf32 = True  # the legacy API, as the capture and the benchmarks set it
for matmul_tf32 in (None, False, True):  # None: never set, PyTorch's default (it falls back to "cuda"/"all")
    if matmul_tf32 is None:
        b.cuda.matmul.fp32_precision = "none"
    else:
        b.cuda.matmul.allow_tf32 = matmul_tf32
    with conv_templates_tf32(True):
        # Inductor's autotune cache reads this; with the ("cuda", "all") fallback alone it raised on an H100
        assert torch.get_float32_matmul_precision() == ("high" if matmul_tf32 else "highest")
        assert b.cudnn.fp32_precision == "tf32" and b.cudnn.conv.fp32_precision == "tf32"
        assert b.cuda.matmul.allow_tf32 is bool(matmul_tf32)  # GEMMs keep the caller's math
    assert torch.get_float32_matmul_precision() == ("high" if matmul_tf32 else "highest")
    assert b.cudnn.fp32_precision == "none" and b.cuda.matmul.allow_tf32 is bool(matmul_tf32)
    assert b.cuda.matmul.fp32_precision == {None: "none", False: "ieee", True: "tf32"}[matmul_tf32]
print("ok")
"""


def test_the_tf32_templates_leave_the_matmul_math_and_its_precision_query_as_they_were():
    # cudnn.fp32_precision is PyTorch's ("cuda", "all") setting: alone, it made cuBLAS matmuls fall back to
    # TF32 and torch.get_float32_matmul_precision() raise (legacy "highest" beside it), so every max-autotune
    # compile of a TF32-template variant failed on an H100. A fresh interpreter: the flags are process-global.
    done = subprocess.run([sys.executable, "-c", MATH_MODES_UNDER_THE_TF32_TEMPLATES], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def _tf32_template_module() -> tuple[str, str]:
    """(a captured module whose convolution is Inductor's Triton template in IEEE fp32, the same in TF32)."""
    source = (CAPTURED / "conv_bn_relu" / "baseline_module.py").read_text()
    assert "ALLOW_TF32 : tl.constexpr = False" in source and "triton_tem_fused_convolution_2" in source
    return source, source.replace("ALLOW_TF32 : tl.constexpr = False", "ALLOW_TF32 : tl.constexpr = True")


def test_a_tf32_convolution_template_in_a_whole_model_candidate_passes_strict_only_where_cudnn_ran_tf32():
    ieee_baseline, candidate = _tf32_template_module()
    cudnn_baseline = (CAPTURED_H200 / "03_conv_bn_relu" / "baseline_module.py").read_text()  # cuDNN's call
    assert "extern_kernels.convolution(" in cudnn_baseline and not ieee_convolution_templates(decompose(cudnn_baseline))
    assert ieee_convolution_templates(decompose(ieee_baseline)) == ["triton_tem_fused_convolution_2"]
    what = "the model compiled with fused_conv_templates"
    judged, ops = whole_graph_judged(what, candidate, cudnn_baseline)
    name = f"{what}: triton_tem_fused_convolution_2"
    assert ops == {name: "convolution"} and set(judged) == {what, name}
    assert "ALLOW_TF32" not in judged[what] and "tl.constexpr = True" in judged[name]
    # the baseline's convolutions ran TF32 in cuDNN: the template's TF32 is the baseline's own math
    assert strict_verdict(judged, cudnn_baseline, "fp32", ops, {"cudnn.allow_tf32": True}) == (None, {})
    # where the capture recorded TF32 off, the same template is rejected, naming the mode
    why, _ = strict_verdict(judged, cudnn_baseline, "fp32", ops, {"cudnn.allow_tf32": False})
    assert why and "computes its cuDNN convolution in TF32" in why and "`cudnn.allow_tf32` = False" in why, why
    # where the baseline computed its convolution in an IEEE template, a TF32 one is lower precision: refused
    judged, ops = whole_graph_judged(what, candidate, ieee_baseline)
    assert ops == {}
    why, _ = strict_verdict(judged, ieee_baseline, "fp32", ops, {"cudnn.allow_tf32": True})
    assert why and why.startswith(f"{what} computes in reduced precision") and "TF32" in why, why
    # TF32 anywhere else in the module is still refused: a pointwise kernel's dot is no convolution
    pointwise = candidate.replace("def triton_poi_fused", "def triton_poi_fused_tf32_dot_x(a):\n"
                                  "    return tl.dot(a, a, allow_tf32=True)\n\n\ndef triton_poi_fused", 1)
    judged, ops = whole_graph_judged(what, pointwise, cudnn_baseline)
    why, _ = strict_verdict(judged, cudnn_baseline, "fp32", ops, {"cudnn.allow_tf32": True})
    assert why and why.startswith(f"{what} computes") and "TF32" in why, why


def test_a_module_decompose_cannot_read_is_judged_whole():
    assert whole_graph_judged("the model", "def f(:\n", "") == ({"the model": "def f(:\n"}, {})


def test_the_tf32_template_variants_leave_a_baseline_that_computed_a_convolution_in_ieee_alone():
    ieee_baseline, _ = _tf32_template_module()
    tf32_on = {"cudnn.allow_tf32": True}
    # a module with a cuDNN convolution and, beside it, a convolution in an IEEE template of Inductor's
    graph = decompose(ieee_baseline)
    [cudnn_call] = _conv("(1, 1)").library_steps()
    graph.steps.append(dataclasses.replace(cudnn_call, index=len(graph.steps)))
    assert [v.name for v in applicable(graph, "cuda", tf32_on)] == ["nchw_convolutions"]


def test_a_convolution_model_compiled_on_nchw_tensors_passes_gates_1_to_3_on_the_cpu_without_a_speed(tmp_path):
    # on the CPU too, Inductor's layout optimization converts the convolution's input to channels-last: the
    # variant compiles other code, and takes Gates 2-3 (no speed is claimed without a GPU)
    ctx, result = cpu_model_job(PROBLEMS / "conv_bn_relu.py", tmp_path,
                                JobOptions(time_budget_s=600, generators=["compile_variants"]))
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
    ctx, _ = cpu_model_job(PROBLEMS / "conv_bn_relu.py", tmp_path,
                           JobOptions(time_budget_s=90, generators=["compile_variants"]))
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
def test_a_convolution_model_compiled_three_ways_goes_through_the_gates(tmp_path):
    """Suite level2/04 (a convolution, GroupNorm and a mean), where layout_optimization=False ran 1.123x faster on
    an H200 (benchmarks/results/2026-12-04-h200-conv-inductor-variants): each variant is compiled to other code than
    the baseline's and screened in Gate 2; the TF32 templates are Inductor's convolution templates with
    ALLOW_TF32 on, and Gate 3 never refuses that TF32 under `strict` (the baseline's cuDNN ran TF32). A variant
    is deployed only with Gate 4's verdict, and then `check` passes."""
    from kernelopt.pipeline.check import CheckRequest, run_check
    from kernelopt.pipeline.job import run_job

    problem = SUITE / "level2" / "04_conv_groupnorm_mean.py"
    result = run_job(str(problem), tmp_path, JobOptions(time_budget_s=500, generators=["compile_variants"]))
    report = json.loads((tmp_path / "report.json").read_text())
    rows = {r["variant"]: r for r in report["compile_variants"]}
    assert list(rows) == ["nchw_convolutions", "tf32_conv_templates", "fused_conv_templates"], rows
    for row in rows.values():
        assert row.get("compile_seconds", 0) > 0 or row["verdict"].startswith("not tried: "), row
        if "gate2" in row:
            assert row["gate2"]["passed"] and row["gate2"]["metrics"]["screen_speedup"] > 0, row
        if "gate3" in row:  # the templates' TF32 is the baseline's own math for a convolution
            assert "reduced precision" not in row["gate3"]["message"] and "TF32" not in row["gate3"]["message"], row
    fused = (tmp_path / "variant-fused_conv_templates" / "baseline_module.py").read_text()
    assert "triton_tem_fused_convolution" in fused and "ALLOW_TF32 : tl.constexpr = True" in fused
    assert "extern_kernels.convolution" not in fused
    assert rows["fused_conv_templates"]["options"] == {"max_autotune_conv_backends": "TRITON",
                                                       "cudnn.fp32_precision": "tf32"}
    deployed = [n for n, r in rows.items() if r["verdict"] == "deployed"]
    if result.outcome == "optimized":
        [name] = deployed
        assert rows[name]["gate4"]["passed"] and name in result.cause and result.speedup >= 1.05
        check = run_check(CheckRequest(str(tmp_path / "optimized_module.py"), str(problem)))
        assert check["passed"], check["summary"]
    else:
        assert not deployed, rows
