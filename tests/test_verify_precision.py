"""Reduced-precision markers in kernel source, and the precision policy."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernelopt.verify.precision import PrecisionPolicy, introduced_markers, reduced_precision_markers

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
