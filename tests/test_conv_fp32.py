"""The conv_fp32 generator (issue 8, item 4): cuDNN convolution constructions for library groups.

On a CPU there is no cuDNN and no TF32: `kernels.conv_emulated.tc_conv` emulates a tensor-core
convolution by truncating both operands to TF32 before an fp32 convolution, so the split's
algebra is tested here against float64 (as tests/test_gemm_emulated.py tests the GEMM splits),
and the candidates built from the real H200 captures (tests/testdata/captured_h200) run their
group's statements on CPU tensors with the epilogue kernels stubbed.
"""
from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

from kernelopt.compiled.group import library_groups, reference_source
from kernelopt.core.precision import declared_precision
from kernelopt.kernels import conv_emulated as ce
from kernelopt.pipeline.model_job import _group_target
from kernelopt.search.generators.conv_group import ConvFp32Generator, _conv_library_source, candidate_source, read_call
from kernelopt.search.registry import GENERATORS, applicable, default_generators, make_generator
from kernelopt.verify.gate3_model import check_model
from kernelopt.verify.precision import reduced_precision_markers, strict_verdict

ROOT = Path(__file__).resolve().parents[1]
H200 = Path(__file__).parent / "testdata" / "captured_h200"
CONV_CAPTURES = ["03_conv_bn_relu", "04_conv_groupnorm_mean"]

#: name -> (input shape, weight shape, aten.convolution arguments): every kind the generator claims
CASES = {
    "conv2d": ((4, 64, 20, 20), (32, 64, 3, 3), dict(padding=1)),
    "conv2d grouped strided dilated": ((2, 32, 21, 21), (48, 8, 3, 3), dict(stride=2, padding=2, dilation=2, groups=4)),
    "transposed grouped dilated": ((2, 32, 16, 16), (32, 16, 3, 3),
                                   dict(stride=2, padding=1, dilation=2, transposed=True, output_padding=1, groups=4)),
    "transposed": ((2, 64, 12, 12), (64, 32, 4, 4), dict(stride=2, padding=1, transposed=True)),
    "conv1d": ((4, 96, 50), (40, 96, 5), dict(padding=2)),
    "conv3d": ((2, 16, 8, 8, 8), (8, 16, 3, 3, 3), dict(padding=1)),
}


def _case(name: str, seed: int = 0):
    xs, ws, kw = CASES[name]
    g = torch.Generator().manual_seed(seed)
    x, w = torch.randn(xs, generator=g), torch.randn(ws, generator=g)
    c_out = w.shape[1] * kw.get("groups", 1) if kw.get("transposed") else w.shape[0]
    b = torch.randn(c_out, generator=g)
    args = ce.conv_args(x.dim() - 2, **kw)
    return x, w, b, args, args.call(x.double(), w.double(), b.double())


@pytest.mark.parametrize("name", list(CASES))
def test_split3_is_fp32_accurate_and_plain_tf32_is_not(name):
    x, w, b, args, ref = _case(name)
    fp32 = max(ce.max_rel_error(args.call(x, w, b), ref), 1e-7)
    for layout in ("concat", "separate"):
        err = ce.max_rel_error(ce.split3_conv(x, w, b, args, layout=layout), ref)
        assert err <= 4 * fp32, (layout, err, fp32)
    assert ce.max_rel_error(ce.tf32_conv(x, w, b, args), ref) >= 300 * fp32  # the single truncated product
    # plain fp32 in another summation order (oneDNN picks the channels_last algorithm by CPU: 2.6x the
    # contiguous conv's error on one 2-core box, <= 2x on another); TF32 is >= 300x
    assert ce.max_rel_error(ce.channels_last_conv(x, w, b, args), ref) <= 8 * fp32


@pytest.mark.parametrize("dropped", ["lo_hi", "hi_lo"])
def test_a_split_missing_a_cross_term_is_far_off(dropped):
    x, w, b, args, ref = _case("conv2d grouped strided dilated")
    fp32 = max(ce.max_rel_error(args.call(x, w, b), ref), 1e-7)
    terms = [t for t in ("lo_hi", "hi_lo", "hi_hi") if t != dropped]
    assert ce.max_rel_error(ce.split3_conv(x, w, b, args, terms=terms), ref) >= 50 * fp32


def test_channel_chunks_bound_the_reduction_length():
    assert ce.channel_chunks(64, 9, 256) == [(0, 21), (21, 43), (43, 64)]  # 22 channels x 9 taps = 198
    assert ce.channel_chunks(16, 9, 256) == [(0, 16)]  # 144 <= 256: one chunk
    assert ce.channel_chunks(8, 343, 256) == [(i, i + 1) for i in range(8)]  # a 7x7x7 kernel: one channel each
    assert ce.channel_chunks(64, 9, 0) == [(0, 64)]
    for cg, taps, chunk in [(64, 9, 128), (32, 16, 256), (100, 1, 256), (3, 49, 512)]:
        parts = ce.channel_chunks(cg, taps, chunk)
        assert parts[0][0] == 0 and parts[-1][1] == cg and all(a < b for a, b in parts)
        assert all(b - a == 1 or (b - a) * taps <= chunk for a, b in parts)


def test_the_split_is_exact_and_tf32_representable():
    x = torch.randn(1000) * torch.logspace(-20, 20, 1000)
    for rounding in ("rn", "trunc"):
        hi, lo = ce.split_tf32(x, rounding)
        assert torch.equal(hi + lo, x) and torch.equal(ce.truncate_tf32(hi), hi)
    special = torch.tensor([float("inf"), -float("inf"), 3.4028235e38])
    assert torch.equal(ce.round_tf32(special)[:2], special[:2]) and torch.isfinite(ce.round_tf32(special)[2])


def test_conv_emu_returns_the_asserted_strides():
    x, w, b, args, ref = _case("conv2d")
    x = x.contiguous(memory_format=torch.channels_last)
    kw = dict(stride=args.stride, padding=args.padding, dilation=args.dilation, transposed=False,
              output_padding=args.output_padding, groups=1)
    want = args.call(x, w, b).contiguous().stride()  # NCHW, where torch gives NHWC for an NHWC input
    for method in ("split3", "channels_last", "fp32"):
        emu = ce.ConvEmu(method)
        r = emu.convolution(x, w, b, out_stride=want, **kw)
        assert r.stride() == want and ce.max_rel_error(r, ref) < 1e-5, method
        assert emu.last_method.startswith(method)


# ---------------------------------------------------------------------------
# the generator on the real H200 captures
# ---------------------------------------------------------------------------


def _conv_group(name: str):
    (g,) = library_groups((H200 / name / "baseline_module.py").read_text())
    return g


@pytest.mark.parametrize("name", CONV_CAPTURES)
def test_conv_groups_of_h200_captures_get_every_construction(name):
    g = _conv_group(name)
    assert g.op == "convolution" and g.anchor_kind == "library" and g.epilogue
    gen = make_generator("conv_fp32")
    assert applicable(gen, _group_target(g, 1.0, "strict")) is None
    strict = gen.propose(_group_target(g, 1.0, "strict"), [], [], 8)
    assert [c.params["method"] for c in strict] == ["split3", "channels_last"]
    tf32 = gen.propose(_group_target(g, 1.0, "tf32"), [], [], 8)
    assert [c.params["method"] for c in tf32] == ["tf32", "split3", "channels_last"]
    conv, _ = read_call(g)
    for c in tf32:
        tree = ast.parse(c.source)
        assert declared_precision(c.source) == {"split3": "split3", "channels_last": "fp32", "tf32": "tf32"}[
            c.params["method"]]
        run_src = next(n.value.value for n in tree.body if isinstance(n, ast.Assign)
                       and getattr(n.targets[0], "id", "") == "_RUN_SOURCE")
        assert "_EMU.convolution(buf0, buf1," in run_src and f"out_stride={conv.out_stride}" in run_src
        assert "extern_kernels.convolution" not in run_src
        assert all(k in run_src for k in g.epilogue)  # Inductor's epilogue kernels, unchanged


def test_the_gemm_generator_declines_conv_groups_and_conv_fp32_declines_gemm_groups():
    conv = _group_target(_conv_group("03_conv_bn_relu"), 1.0, "strict")
    assert "not convolution" in (make_generator("gemm_fp32").applicable(conv) or "")
    (gemm,) = library_groups((H200 / "01_linear_bias_gelu" / "baseline_module.py").read_text())
    assert "handles convolution groups, not mm" in ConvFp32Generator().applicable(_group_target(gemm, 1.0, "strict"))
    assert "library groups" in ConvFp32Generator().applicable(dataclasses.replace(conv, group={}))


def _with_anchor(g, text: str):
    body = list(g.body)
    body[g.anchor_in_body] = text
    return dataclasses.replace(g, body=body)


def test_declines_say_why():
    g = _conv_group("03_conv_bn_relu")
    gen = ConvFp32Generator()
    bf16 = dataclasses.replace(g, param_dtypes={p: "bfloat16" for p in g.param_dtypes})
    reason = applicable(gen, _group_target(bf16, 1.0, "strict"))
    assert reason and "fp32" in reason and "bf16" in reason
    target = _group_target(g, 1.0, "strict")
    target.dtype = "bf16"  # the job's dtype
    assert "bf16" in applicable(gen, target)
    call = g.body[g.anchor_in_body]
    cases = {
        call.replace("stride=(1, 1)", "stride=s"): "stride is not a literal",
        call.replace("groups=1", "groups=1, memory_format=None"): "unsupported convolution argument 'memory_format'",
        call.replace("buf2 = ", "buf2, buf99 = "): "bound to one name",
        call.replace("extern_kernels.convolution", "torch.ops.aten.convolution"): "not an `x = extern_kernels",
    }
    for text, why in cases.items():
        reason = gen.applicable(_group_target(_with_anchor(g, text), 1.0, "strict"))
        assert reason and why in reason, (text, reason)
    no_assert = dataclasses.replace(g, body=[s for s in g.body if not s.startswith("assert_size_stride(buf2")])
    assert "asserts no strides" in gen.applicable(_group_target(no_assert, 1.0, "strict"))
    tem = dataclasses.replace(g, anchor_kind="template")
    assert "template" in gen.applicable(_group_target(tem, 1.0, "strict"))


def test_conv1d_gets_no_channels_last_candidate():
    g = _conv_group("03_conv_bn_relu")
    call = g.body[g.anchor_in_body]
    one_d = call.replace("stride=(1, 1), padding=(1, 1), dilation=(1, 1)", "stride=(1,), padding=(1,), dilation=(1,)")
    one_d = one_d.replace("output_padding=(0, 0)", "output_padding=(0,)")
    body = [one_d if s == call else s.replace("(2097152, 1, 16384, 128)", "(16384, 1, 128)")
            for s in g.body]
    g1 = dataclasses.replace(g, body=body)
    target = _group_target(g1, 1.0, "strict")
    assert ConvFp32Generator().applicable(target) is None
    assert ConvFp32Generator().methods(target) == ["split3"]


# ---------------------------------------------------------------------------
# the candidates' group statements, run on CPU tensors
# ---------------------------------------------------------------------------


class _Stub:
    """An epilogue kernel: records what it was launched with (the convolution's output, first)."""

    def __init__(self, seen: list):
        self.seen = seen

    def run(self, *args, stream=None):
        self.seen.append([a.clone() if isinstance(a, torch.Tensor) else a for a in args])

    def __call__(self, *args):  # a CPU capture's C++ kernel is called directly
        self.run(*args)


def _fake_output_module(group, seen: list) -> types.ModuleType:
    from torch._inductor.select_algorithm import extern_kernels

    mod = types.ModuleType("fake_output_module")
    mod.__dict__.update(torch=torch, extern_kernels=extern_kernels,
                        assert_size_stride=torch._C._dynamo.guards.assert_size_stride,
                        empty_strided_cuda=lambda size, stride, dtype: torch.empty_strided(size, stride, dtype=dtype).zero_(),
                        get_raw_stream=lambda index: None)
    for k in group.epilogue:
        setattr(mod, k, _Stub(seen))
    return mod


def _load(source: str) -> types.ModuleType:
    mod = types.ModuleType("candidate")
    exec(compile(source, "candidate", "exec", dont_inherit=True), mod.__dict__)  # not this file's __future__
    return mod


def _group_inputs(group, seed: int = 0) -> list:
    g = torch.Generator().manual_seed(seed)
    out = []
    for p in group.params:
        shape, stride = group.param_shapes[p]
        t = torch.empty_strided(shape, stride, dtype=torch.float32)
        out.append(t.copy_(torch.randn(shape, generator=g)))
    return out


def _run_group(source: str, group, inputs):
    seen: list = []
    runner = _load(source).bind(_fake_output_module(group, seen))
    runner.run(*[t.clone() for t in inputs], stream=object())
    return seen, runner


def test_candidates_reproduce_the_reference_group_on_captured_shapes():
    """04_conv_groupnorm_mean at its real sizes (64x32x128x128 channels_last input, 3x3 kernel): every
    epilogue kernel receives what it received from Inductor's own statements, in the same strides."""
    g = _conv_group("04_conv_groupnorm_mean")
    inputs = _group_inputs(g)
    ref, _ = _run_group(reference_source(g), g, inputs)
    conv_out = ref[0][0]
    assert conv_out.shape == (64, 64, 126, 126) and conv_out.stride() == (1016064, 1, 8064, 64)
    resolved = {}
    for method in ("split3", "channels_last"):
        seen, runner = _run_group(candidate_source(g, method), g, inputs)
        assert len(seen) == len(ref) == len(g.epilogue)
        for launch, want in zip(seen, ref, strict=True):
            for a, b in zip(launch, want, strict=True):
                if isinstance(b, torch.Tensor):
                    assert a.stride() == b.stride() and a.dtype == b.dtype
                    err = (a - b).abs().max().item() / max(b.abs().max().item(), 1e-30)
                    assert err < 1e-4, (method, err)
        resolved[method] = runner.kernelopt_resolved_method()
    assert resolved["channels_last"] == "channels_last"
    # 32 input channels x 9 taps = 288 > 256: two chunks of 16 (144 per TF32 term)
    assert resolved["split3"].startswith("split3 (concat") and "2 chunk(s) 16+16" in resolved["split3"]


def test_the_embedded_construction_on_the_03_capture_arguments():
    """03_conv_bn_relu's call, from the candidate's own embedded library, on inputs of the captured
    layout (channels_last) with fewer images and pixels: split3 within a few fp32 errors of float64."""
    g = _conv_group("03_conv_bn_relu")
    conv, _ = read_call(g)
    ns = _load(_conv_library_source() + "\n_EMU = ConvEmu('split3')\n")
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(2, 64, 24, 24, generator=gen).contiguous(memory_format=torch.channels_last)
    w = torch.randn(128, 64, 3, 3, generator=gen).contiguous(memory_format=torch.channels_last)
    args = ce.conv_args(2, **{k: v for k, v in conv.static.items()})
    ref = args.call(x.double(), w.double())
    stride = ref.contiguous(memory_format=torch.channels_last).stride()
    r = ns._EMU.convolution(x, w, None, out_stride=stride, **conv.static)
    fp32 = ce.max_rel_error(args.call(x, w), ref)
    assert r.stride() == stride and ce.max_rel_error(r, ref) <= 4 * max(fp32, 1e-7)
    assert "3 chunk(s)" in ns._EMU.last_method  # 64 channels x 9 taps: chunks of <= 28 channels


# ---------------------------------------------------------------------------
# Gate 3's strict verdict
# ---------------------------------------------------------------------------


def test_gate3_strict_admits_the_emulation_only_by_the_float64_test_and_rejects_plain_tf32():
    path = H200 / "04_conv_groupnorm_mean" / "baseline_module.py"
    g = _conv_group("04_conv_groupnorm_mean")
    baseline = path.read_text()
    tf32 = candidate_source(g, "tf32")
    # plain TF32 cuDNN: the baseline's own math where its convolution ran TF32 (SPEC §3), and only there
    ops = {g.name: g.op}
    assert strict_verdict({g.name: tf32}, baseline, library_ops=ops, modes={"cudnn.allow_tf32": True}) == (None, {})
    reason, _ = strict_verdict({g.name: tf32}, baseline, library_ops=ops, modes={"cudnn.allow_tf32": False})
    assert reason and "in TF32, but the baseline's call ran in IEEE fp32" in reason
    reason, _ = strict_verdict({g.name: tf32}, baseline)  # nothing recorded: not admitted
    assert reason and "reduced precision" in reason and "'tf32'" in reason
    assert any("declared precision 'tf32'" in m for m in reduced_precision_markers(tf32))
    assert strict_verdict({g.name: candidate_source(g, "channels_last")}, baseline) == (None, {})
    reason, emulated = strict_verdict({g.name: candidate_source(g, "split3")}, baseline)
    assert reason is None and emulated == {g.name: "split3"}  # must pass the float64 test

    # the float64 test itself (check_model with require_float64, as gate3_stitched calls it)
    x, w, b, args, ref = _case("conv2d")
    r32 = [args.call(x, w, b)]
    ok = check_model(r32, [ce.split3_conv(x, w, b, args)], [ref], "strict", require_float64=True)
    assert ok.passed and ok.metrics["branch"] == "rho" and ok.metrics["rho"] <= 10
    wrong = ce.split3_conv(x, w, b, args, terms=("hi_lo", "hi_hi"))
    bad = check_model(r32, [wrong], [ref], "strict", require_float64=True)
    assert not bad.passed and bad.metrics["rho"] > 10


def test_registry_and_the_cli_list_conv_fp32(capsys):
    from kernelopt.cli.main import main

    spec = GENERATORS["conv_fp32"]
    assert spec.targets == ("group",) and spec.policies == ("strict", "tf32") and spec.dtypes == ("fp32",)
    # opt-in: slower than the baseline's cuDNN on every suite shape on the H200 (the registry says why)
    assert "convolution" in spec.touches and not spec.default and "conv_fp32" not in default_generators()
    assert main(["generators"]) == 0
    line = next(s for s in capsys.readouterr().out.splitlines() if s.startswith("conv_fp32"))
    assert "[opt-in; group; strict/tf32; fp32]" in line


def test_the_benchmark_measures_every_convolution_problem_of_the_suite():
    """Issue 27: conv_fp32.PROBLEMS holds every suite problem that builds a convolution module, so a grown
    suite's new shapes (2-D/3-D, transposed, grouped, depthwise) are measured; networks of more than
    NETWORK_CONVOLUTIONS convolutions are measured by their jobs instead."""
    from benchmarks.conv_fp32 import NETWORK_CONVOLUTIONS, PROBLEMS
    from tests.test_suite_problems import SUITE, build

    kinds = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d, torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d,
             torch.nn.ConvTranspose3d)
    with_conv = []
    for path in sorted(SUITE.glob("level*/*.py")):
        model, _ = build(str(path.relative_to(SUITE)))
        if 0 < sum(isinstance(m, kinds) for m in model.modules()) <= NETWORK_CONVOLUTIONS:
            with_conv.append(str(path.relative_to(SUITE))[:-3])
    assert sorted(PROBLEMS) == with_conv


def test_the_benchmark_records_what_follows_each_convolution_and_replays_its_elementwise_part():
    from benchmarks.conv_fp32 import epilogue_fn, record_convolutions

    problems = ROOT / "benchmarks" / "problems"
    (conv,) = record_convolutions(problems / "level2" / "16_convtranspose3d_bias_hardswish_clamp_gelu.py")
    assert conv["transposed"] and len(conv["x"]) == 5 and conv["follows"] == ["add", "hardswish", "clamp", "gelu"]
    assert [st["op"] for st in conv["epilogue"]] == ["aten.add.Tensor", "aten.hardswish.default",
                                                     "aten.clamp.default", "aten.gelu.default"]
    (conv,) = record_convolutions(problems / "level2" / "10_convtranspose_bias_tanh_center.py")
    # the centering reads a mean (a reduction): only the element-wise part before it is replayed
    assert conv["follows"] == ["add", "tanh", "mul", "mean", "sub"] and len(conv["epilogue"]) == 3
    y = torch.randn(2, 32, 5, 5)
    bias = torch.randn(32, 1, 1, generator=torch.Generator().manual_seed(1))  # epilogue_fn's draw, seed 1
    assert torch.allclose(epilogue_fn(conv["epilogue"], "cpu")(y), torch.tanh(y + bias) * 1.5)
    block = record_convolutions(problems / "level3" / "10_resnet_basic_block_stack.py")
    assert len(block) == 4 and all(not c["epilogue"] for c in block)  # batch norm first: nothing replayed
    assert [c["follows"] for c in block[:2]] == [["native_batch_norm", "relu"], ["native_batch_norm", "add", "relu"]]


def test_the_benchmark_runs_its_cpu_smoke_mode(tmp_path):
    proc = subprocess.run([sys.executable, "benchmarks/conv_fp32.py", "--cpu-smoke", "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    import json

    data = json.loads((tmp_path / "conv_fp32.json").read_text())
    md = (tmp_path / "conv_fp32.md").read_text()
    assert data["shapes"] and "cudnn_fp32" in md and "split3_chunk256" in md
    # the first smoke shape is timed again with level2/18's element-wise epilogue (sub, mish, mul)
    epi = data["shapes"]["smoke conv2d 3x3"]["_epilogue"]
    assert epi["ops"] == ["sub", "mish", "mul"] and "ms" in epi["methods"]["cudnn_fp32"]
    assert "| ↳ + epilogue, eager |" in md and "2/18#0: sub, mish, mul" in md
    for rows in data["shapes"].values():
        assert rows["cudnn_fp32"]["rho"] == pytest.approx(1.0)
        assert rows["split3_chunk256"]["rho"] <= 4 and rows["cudnn_tf32"]["rho"] > 100
    # the Triton implicit GEMM where it applies (2-D forward), its tile named; never on transposed convolutions
    tri = data["shapes"]["smoke conv2d 3x3"]["triton_bf16x3"]
    assert tri["rho"] <= 4 and tri["tile"] and tri["passes_strict_gate3"] and tri["vs_baseline_call"] > 0
    assert "triton_bf16x3" not in data["shapes"]["smoke convT3d"]
    assert not data["shapes"]["smoke conv2d 3x3"]["triton_tf32_nhwc"]["passes_strict_gate3"]  # TF32, never
    assert "fastest passing strict's float64 test" in md and "Geomean of the fastest method passing" in md
