"""Reduced-precision markers in kernel source, and the precision policy."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernelopt.core.precision import PrecisionPolicy
from kernelopt.verify.precision import introduced_markers, reduced_precision_markers

CAPTURED = Path(__file__).parent / "testdata" / "captured"


def template_kernel() -> str:
    """Inductor's GEMM template kernel (ALLOW_TF32 constexpr) from a module captured on an H200."""
    module = (CAPTURED / "linear_gelu" / "baseline_module.py").read_text()
    match = re.search(r"async_compile\.triton\('triton_tem_\w+', '''(.*?)'''", module, re.S)
    return match.group(1)


def test_inductor_template_with_allow_tf32_false_is_full_precision():
    src = template_kernel()
    assert "allow_tf32=ALLOW_TF32" in src and "ALLOW_TF32 : tl.constexpr = False" in src
    assert reduced_precision_markers(src) == []


def test_inductor_template_with_allow_tf32_true_is_flagged():
    src = template_kernel().replace("ALLOW_TF32 : tl.constexpr = False", "ALLOW_TF32 : tl.constexpr = True")
    markers = reduced_precision_markers(src)
    assert len(markers) == 1 and "allow_tf32=ALLOW_TF32 = True" in markers[0] and "TF32" in markers[0]


def test_whole_captured_modules_scan_their_embedded_kernels():
    for problem in ("linear_gelu", "attention_small", "conv_bn_relu", "softmax_rows"):
        module = (CAPTURED / problem / "baseline_module.py").read_text()
        assert reduced_precision_markers(module) == [], problem
    module = (CAPTURED / "linear_gelu" / "baseline_module.py").read_text()
    flipped = module.replace("ALLOW_TF32 : tl.constexpr = False", "ALLOW_TF32 : tl.constexpr = True")
    line = next(n for n, text in enumerate(module.splitlines(), 1) if "tl.dot(" in text)
    assert [m.split(":")[0] for m in reduced_precision_markers(flipped)] == [f"line {line}"]


def test_dots_casts_and_math_modes():
    src = '''
import torch
import triton
import triton.language as tl

torch.backends.cuda.matmul.allow_tf32 = True
torch.set_float32_matmul_precision("high")

@triton.jit
def k(a_ptr, b_ptr):
    a = tl.load(a_ptr)
    d1 = tl.dot(a, a)
    d2 = tl.dot(a, a, input_precision="ieee")
    d3 = tl.dot(a, a, allow_tf32=False)
    d4 = tl.dot(a, a, input_precision="tf32x3")
    h = a.to(tl.bfloat16)
    z = tl.zeros([16], dtype=tl.float16)

def run(x, stream=None):
    return x.half()
'''
    markers = reduced_precision_markers(src)
    text = "\n".join(markers)
    assert "line 6: torch.backends.cuda.matmul.allow_tf32 = True" in text
    assert "line 7: torch.set_float32_matmul_precision('high')" in text
    assert 'line 12: tl.dot without input_precision="ieee"' in text
    assert "line 13" not in text and "line 14" not in text  # ieee / allow_tf32=False are full precision
    assert "line 15: tl.dot with input_precision='tf32x3'" in text
    assert "line 16: cast .to(tl.bfloat16)" in text and "line 17: uses tl.float16" in text
    assert "line 20: cast .half()" in text
    assert len(markers) == 7


def test_unresolved_precision_is_reported_as_possible_tf32():
    src = "import triton.language as tl\ndef f(a, P):\n    return tl.dot(a, a, allow_tf32=P)\n"
    assert "may be TF32" in reduced_precision_markers(src)[0]


def test_unparseable_source_falls_back_to_patterns():
    markers = reduced_precision_markers("def f(:\n    y = tl.dot(a, b)  \n    z = x.to(tl.float16)\n")
    assert [m.split(":")[0] for m in markers] == ["line 2", "line 3"]


def test_introduced_markers_ignore_what_the_baseline_already_has():
    base = "import triton.language as tl\ndef f(a):\n    return a.to(tl.float16)\n"
    cand = base + "def g(a):\n    return tl.dot(a, a)\n"
    assert introduced_markers(base, base) == []
    new = introduced_markers(cand, base)
    assert len(new) == 1 and "tl.dot" in new[0]


def test_policy_parsing():
    assert PrecisionPolicy.parse("tf32") is PrecisionPolicy.TF32
    assert PrecisionPolicy.parse(PrecisionPolicy.STRICT) is PrecisionPolicy.STRICT
    with pytest.raises(ValueError, match="strict"):
        PrecisionPolicy.parse("fast")


def test_a_kernel_file_candidate_in_reduced_precision_fails_gate3_under_strict(tmp_path):
    """Single-kernel jobs give Gate 3 the same strict verdict as model jobs, computed apart the same way (the
    file's reference and the candidate in two children, the judge in a third): a candidate that declares (or
    computes in) reduced precision is rejected whatever its error; an identical one passes."""
    from kernelopt.pipeline.context import JobContext
    from kernelopt.pipeline.gates import kernel_gate3
    from kernelopt.pipeline.options import JobOptions

    problem = Path(__file__).parent.parent / "benchmarks" / "kernels" / "add_relu_kernel.py"
    original = problem.read_text()
    low = original + '\nKERNELOPT_PRECISION = "bf16"\n'
    ctx = JobContext(str(problem), tmp_path, JobOptions(time_budget_s=600))
    try:
        def check(source: str, policy: str):
            return kernel_gate3(ctx, source, [101], policy, 10.0, "fp32", "cpu", env={"TRITON_INTERPRET": "1"})

        rejected = check(low, "strict")
        assert not rejected.passed
        assert "reduced precision" in rejected.message and rejected.metrics["branch"] == "reduced-precision"
        same = check(original, "strict")
        assert same.passed and same.metrics["judged_apart"], same.message
        wrong = check(original.replace("tl.maximum(", "-tl.maximum("), "strict")  # a kernel with the sign flipped
        assert not wrong.passed and "output 0" in wrong.message, wrong.message
    finally:
        ctx.close()


H200_CAPTURES = Path(__file__).parent / "testdata" / "captured_h200"
PYTORCH_DEFAULT_MODES = {"cuda.matmul.allow_tf32": False, "cudnn.allow_tf32": True,
                         "float32_matmul_precision": "highest"}  # as capture recorded them on the H200


def _steps_and_groups(name: str):
    from kernelopt.compiled.decompose import decompose
    from kernelopt.compiled.group import library_groups

    source = (H200_CAPTURES / name / "baseline_module.py").read_text()
    return decompose(source).steps, library_groups(source)


def test_a_baseline_convolution_under_pytorchs_default_modes_is_stated_as_tf32():
    # level2/03 on the H200 (2026-12-03): its report said "deployed code computes in reduced precision: no"
    # and, one line below, that its cuDNN convolution ran in TF32; the source holds no marker of it.
    from kernelopt.verify.precision import library_math_markers

    steps, (conv,) = _steps_and_groups("03_conv_bn_relu")
    source = (H200_CAPTURES / "03_conv_bn_relu" / "baseline_module.py").read_text()
    assert reduced_precision_markers(source) == []
    (marker,) = library_math_markers(steps, PYTORCH_DEFAULT_MODES)
    assert marker.startswith("1 cuDNN convolution call(s) on fp32 data run in TF32 (`cudnn.allow_tf32` = True, "
                             "PyTorch default): extern_kernels.convolution")
    assert library_math_markers(steps, PYTORCH_DEFAULT_MODES, replaced=conv.steps) == []  # replaced: gone
    assert library_math_markers(steps, {**PYTORCH_DEFAULT_MODES, "cudnn.allow_tf32": False}) == []
    assert library_math_markers(steps, PYTORCH_DEFAULT_MODES, dtype="bf16") == []  # below fp32 by its dtype
    assert library_math_markers(steps, {}) == []  # no modes recorded (a CPU job, an old capture)


def test_baseline_gemms_are_tf32_only_when_the_matmul_mode_says_so():
    from kernelopt.verify.precision import library_math_markers

    steps, _ = _steps_and_groups("01_linear_bias_gelu")
    assert library_math_markers(steps, PYTORCH_DEFAULT_MODES) == []  # cuBLAS fp32 stays IEEE by default
    (marker,) = library_math_markers(steps, {**PYTORCH_DEFAULT_MODES, "cuda.matmul.allow_tf32": True})
    assert marker.startswith("1 cuBLAS GEMM call(s) on fp32 data run in TF32 (`cuda.matmul.allow_tf32` = True):")
