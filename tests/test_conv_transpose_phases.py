"""Transposed convolutions as per-phase forward convolutions (issue 35, item 2), and the precision contract
of a replaced library call under `strict` (item 1).

The decomposition is checked against `torch.convolution(..., transposed=True)` in float64 on random draws of
every argument (1-D/2-D/3-D, stride, padding, dilation, output_padding, groups, bias, kernels smaller than
the stride): an exact identity, so the error is rounding only. The generator is checked on a real capture
(a small ConvTranspose2d model compiled on the CPU), its candidate run through the group's statements
with the epilogue kernels stubbed, as tests/test_cudnn_autotune.py does for cuDNN's autotuned call.
"""
from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest
import torch

from kernelopt.compiled.group import library_groups, reference_source
from kernelopt.core.precision import LIBRARY_MODE, declared_precision
from kernelopt.kernels.conv_transpose_phases import ConvTransposePhases, plan_dim
from kernelopt.pipeline.model_job import _group_target
from kernelopt.search.generator import Attempt
from kernelopt.search.generators.conv_group import read_call
from kernelopt.search.generators.conv_transpose_phases import METHODS, ConvTransposePhasesGenerator
from kernelopt.search.registry import GENERATORS, applicable, default_generators, make_generator
from kernelopt.verify.precision import strict_verdict
from tests.test_conv_fp32 import _group_inputs, _run_group

TESTDATA = Path(__file__).parent / "testdata"
H200 = TESTDATA / "captured_h200"


def _draw(rng: random.Random):
    dims = rng.choice([1, 2, 3])
    g = rng.choice([1, 1, 2, 3])
    k = [rng.randint(1, 5) for _ in range(dims)]
    s = [rng.randint(1, 4) for _ in range(dims)]
    d = [rng.randint(1, 3) for _ in range(dims)]
    p = [rng.randint(0, d[i] * (k[i] - 1)) for i in range(dims)]
    op = [rng.randint(0, max(s[i], d[i]) - 1) for i in range(dims)]
    size = [rng.randint(1, 7) for _ in range(dims)]
    return dims, g, k, s, d, p, op, size


def test_the_phases_compute_the_transposed_convolution_for_every_argument():
    rng = random.Random(35)
    torch.manual_seed(35)
    emu, checked, empty_phase = ConvTransposePhases(), 0, 0
    while checked < 150:
        dims, g, k, s, d, p, op, size = _draw(rng)
        out = [(size[i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1 for i in range(dims)]
        if min(out) <= 0 or any(op[i] >= max(s[i], d[i]) for i in range(dims)):
            continue
        x = torch.randn(2, g * rng.randint(1, 3), *size, dtype=torch.float64)
        w = torch.randn(x.shape[1], rng.randint(1, 3), *k, dtype=torch.float64)
        b = torch.randn(w.shape[1] * g, dtype=torch.float64) if rng.random() < 0.3 else None
        want = torch.convolution(x, w, b, s, p, d, True, op, g)
        got = emu.convolution(x, w, b, s, p, d, True, op, g)
        assert got.shape == want.shape
        assert (got - want).abs().max().item() <= 1e-12 * max(1.0, want.abs().max().item()), (dims, g, k, s, d, p, op)
        empty_phase += any(k[i] < s[i] for i in range(dims))
        checked += 1
    assert empty_phase > 10  # phases without a tap (kernel smaller than the stride) were among the draws


def test_each_phase_holds_its_share_of_the_taps_and_outputs():
    # ConvTranspose2d's usual 2x upsampling, k4 s2 p1: two taps per phase per dim, every output covered once
    plans = [plan_dim(64, 4, 2, 1, 1, 0, phase) for phase in (0, 1)]
    assert [len(pl.taps) for pl in plans] == [2, 2] and sum(pl.count for pl in plans) == 128
    assert sorted(pl.first for pl in plans) == [0, 1]
    # k3 s2 p1 output_padding 1: phases of 1 and 2 taps (3 products per output pair, none wasted)
    plans = [plan_dim(16, 3, 2, 1, 1, 1, phase) for phase in (0, 1)]
    assert sorted(len(pl.taps) for pl in plans) == [1, 2] and sum(pl.count for pl in plans) == 32


def test_the_result_keeps_the_asserted_strides_and_reads_the_live_weight():
    x = torch.randn(2, 4, 5, 5).contiguous(memory_format=torch.channels_last)
    w = torch.randn(4, 3, 4, 4)
    emu = ConvTransposePhases()
    shape = (2, 3, 10, 10)
    stride = torch.empty(shape).contiguous(memory_format=torch.channels_last).stride()
    y = emu.convolution(x, w, None, (2, 2), (1, 1), (1, 1), True, (0, 0), 1, out_stride=stride)
    assert y.stride() == stride
    torch.testing.assert_close(y, torch.conv_transpose2d(x, w, stride=2, padding=1), rtol=1e-5, atol=1e-5)
    w.mul_(2.0)  # a loaded state dict: the next call sees the new weight (nothing cached)
    torch.testing.assert_close(emu.convolution(x, w, None, (2, 2), (1, 1), (1, 1), True, (0, 0), 1),
                               torch.conv_transpose2d(x, w, stride=2, padding=1), rtol=1e-5, atol=1e-5)
    assert emu.last_method.startswith("4 forward convolution(s), one per output phase")


@pytest.fixture(scope="module")
def convt_group(tmp_path_factory):
    """The library group of a ConvTranspose2d compiled on the CPU (the capture as a job makes it)."""
    from kernelopt.compiled.capture import CaptureRequest, capture_model

    work = tmp_path_factory.mktemp("convt")
    cg = capture_model(CaptureRequest(str(TESTDATA / "convtranspose_tanh_small.py"), str(work), device="cpu",
                                      context_timing=False))
    (g,) = library_groups(Path(cg.module_path).read_text())
    return g


def test_the_generator_proposes_both_methods_for_a_transposed_group_once(convt_group):
    g = convt_group
    conv, _ = read_call(g)
    assert g.op == "convolution" and conv is not None and conv.static["transposed"] is True
    gen = make_generator("conv_transpose_phases")
    target = _group_target(g, 1.0, "strict")
    assert applicable(gen, target) is None
    cands = gen.propose(target, [], [], 8)
    assert [c.params["method"] for c in cands] == list(METHODS)
    for c in cands:
        assert c.params["precision"] == LIBRARY_MODE and declared_precision(c.source) == LIBRARY_MODE
        run_src = next(n.value.value for n in ast.parse(c.source).body if isinstance(n, ast.Assign)
                       and getattr(n.targets[0], "id", "") == "_RUN_SOURCE")
        assert "_EMU.convolution(" in run_src and f"out_stride={conv.out_stride}" in run_src
        assert "extern_kernels.convolution" not in run_src and all(k in run_src for k in g.epilogue)
        # a library call in the caller's math mode: admitted under strict, like the compiler's own call
        assert strict_verdict({g.name: c.source}, reference_source(g), library_ops={g.name: g.op},
                              modes={"cudnn.allow_tf32": True}) == (None, {})
    assert gen.propose(target, [], [Attempt(c, True, "timed", "") for c in cands], 8) == []


def test_the_candidate_hands_the_epilogue_what_the_compiler_s_call_did(convt_group):
    g = convt_group
    inputs = _group_inputs(g)
    ref, _ = _run_group(reference_source(g), g, inputs)
    for method in METHODS:
        gen = ConvTransposePhasesGenerator()
        (c,) = [c for c in gen.propose(_group_target(g, 1.0, "strict"), [], [], 8) if c.params["method"] == method]
        seen, runner = _run_group(c.source, g, inputs)
        assert len(seen) == len(ref) == len(g.epilogue)
        for launch, want in zip(seen, ref, strict=True):
            for a, b in zip(launch, want, strict=True):
                if isinstance(b, torch.Tensor):
                    assert a.stride() == b.stride() and a.dtype == b.dtype
                    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
        assert "one per output phase on the CPU" in runner.kernelopt_resolved_method()


def test_it_declines_forward_convolutions_gemms_and_kernels():
    gen = ConvTransposePhasesGenerator()
    (conv,) = library_groups((H200 / "03_conv_bn_relu" / "baseline_module.py").read_text())
    assert "this one is a forward convolution" in gen.applicable(_group_target(conv, 1.0, "strict"))
    (gemm,) = library_groups((H200 / "01_linear_bias_gelu" / "baseline_module.py").read_text())
    assert "convolution groups, not" in gen.applicable(_group_target(gemm, 1.0, "strict"))
    from kernelopt.search.generator import KernelTarget
    assert "not single kernels" in gen.applicable(KernelTarget("triton_poi_x", "", "pointwise", [], {}, []))


def test_registry_lists_it_by_default_for_both_policies_and_every_dtype():
    spec = GENERATORS["conv_transpose_phases"]
    assert spec.default and "conv_transpose_phases" in default_generators()
    assert spec.targets == ("group",) and spec.policies == ("strict", "tf32") and "transposed" in spec.touches
    assert set(spec.dtypes) == {"fp32", "bf16", "fp16"}


# ---- the precision contract of a replaced library call under `strict` (SPEC §3, Gate 3) ----

_TRITON_CONV = '''
import triton
import triton.language as tl
KERNELOPT_PRECISION = "tf32"

@triton.jit
def conv_kernel(x_ptr, w_ptr, y_ptr):
    a = tl.load(x_ptr + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :])
    b = tl.load(w_ptr + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :])
    acc = tl.dot(a, b, input_precision="tf32")
    tl.store(y_ptr + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :], acc)
'''
_BASELINE = "import torch\n"


def test_a_tf32_convolution_replacing_a_tf32_baseline_call_passes_strict():
    ops = {"grp": "convolution"}
    assert strict_verdict({"grp": _TRITON_CONV}, _BASELINE, library_ops=ops,
                          modes={"cudnn.allow_tf32": True}) == (None, {})
    undeclared = _TRITON_CONV.replace('KERNELOPT_PRECISION = "tf32"\n', "")  # found by its tl.dot alone
    assert strict_verdict({"grp": undeclared}, _BASELINE, library_ops=ops,
                          modes={"cudnn.allow_tf32": True}) == (None, {})


def test_the_same_convolution_is_rejected_where_the_baseline_ran_ieee_fp32():
    for src in (_TRITON_CONV, _TRITON_CONV.replace('KERNELOPT_PRECISION = "tf32"\n', "")):
        reason, _ = strict_verdict({"grp": src}, _BASELINE, library_ops={"grp": "convolution"},
                                   modes={"cudnn.allow_tf32": False})
        assert reason is not None and "cuDNN convolution in TF32" in reason
        assert "`cudnn.allow_tf32` = False at capture" in reason


def test_tf32_in_a_gemm_or_an_epilogue_or_below_tf32_is_still_rejected():
    modes = {"cudnn.allow_tf32": True, "cuda.matmul.allow_tf32": False}
    reason, _ = strict_verdict({"grp": _TRITON_CONV}, _BASELINE, library_ops={"grp": "addmm"}, modes=modes)
    assert "cuBLAS GEMM in TF32" in reason and "`cuda.matmul.allow_tf32` = False" in reason
    # an epilogue kernel's replacement replaces no library call: its TF32 is reduced precision, as ever
    reason, _ = strict_verdict({"triton_poi_fused_relu_0": _TRITON_CONV}, _BASELINE, library_ops={}, modes=modes)
    assert "computes in reduced precision (declared 'tf32')" in reason
    undeclared = _TRITON_CONV.replace('KERNELOPT_PRECISION = "tf32"\n', "")
    reason, _ = strict_verdict({"triton_poi_fused_relu_0": undeclared}, _BASELINE, library_ops={}, modes=modes)
    assert "computes in reduced precision" in reason and "tf32" in reason
    cast = _TRITON_CONV.replace("acc = tl.dot(a, b", "acc = tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16)")
    reason, _ = strict_verdict({"grp": cast}, _BASELINE, library_ops={"grp": "convolution"}, modes=modes)
    assert reason is not None and "bfloat16" in reason
    # a user who allowed TF32 GEMMs: a TF32 GEMM replacement is then the baseline's own math
    assert strict_verdict({"grp": _TRITON_CONV}, _BASELINE, library_ops={"grp": "mm"},
                          modes={"cuda.matmul.allow_tf32": True}) == (None, {})
    # bf16 data: no TF32 admission needed or given (the data has fewer bits than TF32 products)
    reason, _ = strict_verdict({"grp": cast}, _BASELINE, "bf16", library_ops={"grp": "convolution"}, modes=modes)
    assert reason is None


def test_a_group_whose_epilogue_writes_in_place_gets_the_phases_written_into_the_callers_buffer(cpu_capture):
    """The caller allocates the transposed convolution's result (compiled/group_span.py); the phases are written
    straight into it, so the group's copy of the result into the caller's buffer copies a tensor onto itself
    (free); the candidate passes Gates 1-2 on real inputs, the epilogue's in-place ReLU included."""
    from kernelopt.compiled.group import group_module_source
    from kernelopt.search.evaluate import EvalBatch, EvalContext, evaluate_batch

    workdir = cpu_capture("convtranspose_relu_inplace", env={"TORCHINDUCTOR_CPP_WEIGHT_PREPACK": "0"})
    (g,) = library_groups((workdir / "baseline_module.py").read_text())
    assert not g.reason, g.reason
    target = _group_target(g, 1.0, "strict")
    cands = [c for c in ConvTransposePhasesGenerator().propose(target, [], [], 8) if c.params["method"] == "phases"]
    (cand,) = cands
    out = g.outputs[0]
    assert f"out=_kernelopt_out_{out})" in cand.source
    ctx = EvalContext(str(TESTDATA / "problems" / "convtranspose_relu_inplace.py"), str(workdir), target, [1, 2, 3],
                      device="cpu")
    own = group_module_source(g)  # the group's own statements, for comparison
    attempts = evaluate_batch(EvalBatch(ctx, [cand, type(cand)(g.name, own, "test", "its own")]))
    assert all(a.passed for a in attempts), [a.feedback for a in attempts]


def test_an_out_buffer_of_another_layout_is_refused_not_written():
    x, w = torch.randn(1, 2, 3, 3), torch.randn(2, 3, 2, 2)
    want = torch.convolution(x, w, None, [2, 2], [0, 0], [1, 1], True, [0, 0], 1)
    out = torch.empty_like(want, memory_format=torch.channels_last)
    got = ConvTransposePhases().convolution(x, w, None, (2, 2), (0, 0), (1, 1), True, (0, 0), 1,
                                            out_stride=out.stride(), out=out)
    assert got is out and torch.allclose(out, want, atol=1e-6)
    with pytest.raises(ValueError, match="the convolution's result"):
        ConvTransposePhases().convolution(x, w, None, (2, 2), (0, 0), (1, 1), True, (0, 0), 1,
                                          out_stride=want.stride(), out=out)
