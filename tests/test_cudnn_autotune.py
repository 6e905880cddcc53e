"""The cudnn_autotune generator (issue 27, item 2): a convolution group's cuDNN call with its algorithm
timed per shape, in the caller's math mode, on the real H200 captures (CPU: the convolution runs in
torch's CPU kernels, so the tests check the rewrite, the strides, the precision declaration and the
report's statements; the speed is measured by `kernelopt bench` on the GPU)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

from kernelopt.compiled.group import library_groups, reference_source
from kernelopt.core.precision import LIBRARY_MODE, declared_precision
from kernelopt.kernels import cudnn_autotuned as rt
from kernelopt.pipeline.model_job import _group_target
from kernelopt.search.generators.conv_group import read_call
from kernelopt.search.generators.cudnn_autotune import METHOD, CudnnAutotuneGenerator, candidate_source
from kernelopt.search.registry import GENERATORS, applicable, default_generators, make_generator
from kernelopt.verify.precision import (
    deployed_reduced_precision,
    library_mode_markers,
    reduced_precision_markers,
    strict_verdict,
)
from tests.test_conv_fp32 import _conv_group, _group_inputs, _run_group

H200 = Path(__file__).parent / "testdata" / "captured_h200"
CONV_CAPTURES = ["03_conv_bn_relu", "04_conv_groupnorm_mean"]


def test_benchmark_mode_is_on_inside_the_scope_only_and_the_math_mode_is_the_callers():
    flags = torch.backends.cudnn
    before = (flags.benchmark, flags.benchmark_limit, flags.allow_tf32)
    with rt.cudnn_benchmark_scope():
        assert flags.benchmark is True and flags.benchmark_limit == 0
        assert flags.allow_tf32 == before[2]  # never touched: the baseline's mode
    assert (flags.benchmark, flags.benchmark_limit, flags.allow_tf32) == before
    with pytest.raises(RuntimeError):
        with rt.cudnn_benchmark_scope():
            raise RuntimeError("the flags are restored on errors too")
    assert (flags.benchmark, flags.benchmark_limit) == before[:2]


@pytest.mark.parametrize("transposed", [False, True])
def test_the_call_computes_aten_convolution_in_the_asserted_strides(transposed):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 8, 9, 9, generator=g).contiguous(memory_format=torch.channels_last)
    w = torch.randn(8, 4, 3, 3, generator=g)  # grouped: 2 groups (transposed: [C_in, C_out/g, k, k])
    b = torch.randn(8 if not transposed else 8, generator=g)
    kw = dict(stride=(2, 2), padding=(1, 1), dilation=(1, 1), transposed=transposed,
              output_padding=(1, 1) if transposed else (0, 0), groups=2)
    want = torch.convolution(x, w, b, [2, 2], [1, 1], [1, 1], transposed, list(kw["output_padding"]), 2)
    stride = want.contiguous().stride()  # NCHW where torch returns NHWC for an NHWC input
    conv = rt.ConvAutotuned()
    r = conv.convolution(x, w, b, out_stride=stride, **kw)
    assert r.stride() == stride and torch.equal(r, want)
    assert conv.convolution(x, w, b, **kw).stride() == want.stride()  # no strides asserted: torch's own
    assert conv.last_method.startswith("cpu")


@pytest.mark.parametrize("name", CONV_CAPTURES)
def test_conv_groups_of_h200_captures_get_the_autotuned_candidate(name):
    g = _conv_group(name)
    gen = make_generator("cudnn_autotune")
    for policy in ("strict", "tf32"):
        target = _group_target(g, 1.0, policy)
        assert applicable(gen, target) is None
        (c,) = gen.propose(target, [], [], 8)
        assert c.params == {"method": METHOD, "precision": LIBRARY_MODE, "construction": c.params["construction"]}
        assert declared_precision(c.source) == LIBRARY_MODE
        run_src = next(n.value.value for n in ast.parse(c.source).body if isinstance(n, ast.Assign)
                       and getattr(n.targets[0], "id", "") == "_RUN_SOURCE")
        conv, _ = read_call(g)
        assert "_EMU.convolution(" in run_src and f"out_stride={conv.out_stride}" in run_src
        assert "extern_kernels.convolution" not in run_src and all(k in run_src for k in g.epilogue)
    # one construction: proposed once, never again
    (c,) = gen.propose(_group_target(g, 1.0, "strict"), [], [], 8)
    from kernelopt.search.generator import Attempt
    assert gen.propose(_group_target(g, 1.0, "strict"), [], [Attempt(c, True, "timed", "")], 8) == []


def test_the_candidate_reproduces_the_reference_group_bit_for_bit_on_the_captured_shapes():
    """04_conv_groupnorm_mean at its real sizes: every epilogue kernel receives exactly what Inductor's own
    statements gave it (on the CPU there is one convolution algorithm: the same numbers)."""
    g = _conv_group("04_conv_groupnorm_mean")
    inputs = _group_inputs(g)
    ref, _ = _run_group(reference_source(g), g, inputs)
    seen, runner = _run_group(candidate_source(g), g, inputs)
    assert len(seen) == len(ref) == len(g.epilogue)
    for launch, want in zip(seen, ref, strict=True):
        for a, b in zip(launch, want, strict=True):
            if isinstance(b, torch.Tensor):
                assert a.stride() == b.stride() and torch.equal(a, b)
    assert runner.kernelopt_resolved_method().startswith("cpu")


def test_it_declines_what_is_not_a_cudnn_convolution_group():
    gen = CudnnAutotuneGenerator()
    (gemm,) = library_groups((H200 / "01_linear_bias_gelu" / "baseline_module.py").read_text())
    assert "convolution groups, not" in gen.applicable(_group_target(gemm, 1.0, "strict"))
    from kernelopt.search.generator import KernelTarget
    kernel = KernelTarget("triton_poi_x", "", "pointwise", [], {}, [])
    assert "not single Triton kernels" in gen.applicable(kernel)


def test_strict_admits_the_library_mode_and_the_deployed_statement_names_its_tf32():
    """The replacement calls cuDNN as the baseline did: not reduced below the baseline, so `strict` admits
    it (Gate 3's tolerance and float64 test still apply); the result states that its convolution runs
    TF32 where the baseline's mode was TF32, and nothing where it was IEEE."""
    g = _conv_group("03_conv_bn_relu")
    baseline = (H200 / "03_conv_bn_relu" / "baseline_module.py").read_text()
    src = candidate_source(g)
    assert strict_verdict({g.name: src}, baseline) == (None, {})
    assert reduced_precision_markers(src) == [] and deployed_reduced_precision({g.name: src}) == []
    tf32 = library_mode_markers({g.name: "convolution"}, {"cudnn.allow_tf32": True})
    assert len(tf32) == 1 and "runs in TF32 under the caller's math mode" in tf32[0] and g.name in tf32[0]
    assert library_mode_markers({g.name: "convolution"}, {"cudnn.allow_tf32": False}) == []
    assert library_mode_markers({g.name: "convolution"}, {"cudnn.allow_tf32": True}, "bf16") == []


def test_registry_lists_it_opt_in_for_both_policies_and_every_dtype(capsys):
    from kernelopt.cli.main import main

    spec = GENERATORS["cudnn_autotune"]
    assert spec.targets == ("group",) and spec.policies == ("strict", "tf32")
    # opt-in: measured no faster than the heuristic's pick on every suite shape (the registry says where)
    assert not spec.default and "cudnn_autotune" not in default_generators() and "convolution" in spec.touches
    assert main(["generators"]) == 0
    lines = capsys.readouterr().out.splitlines()
    line = next(s for s in lines if s.startswith("cudnn_autotune"))
    assert "[opt-in; group; strict/tf32; fp32/bf16/fp16]" in line and "math mode" in line
    # the listing says which generators a job gets unnamed
    assert next(s for s in lines if s.startswith("launch_config")).split("[")[1].startswith("default;")
