"""Convolution epilogue regions (rewrite/conv_regions.py), their description (rewrite/conv_epilogue.py) and
cuDNN's fused calls of them (kernels/cudnn_fused.py, on a GPU).

A region's description is what a fused cuDNN call is built from and what its output is compared with: each
test traces a model to the ATen graph Inductor receives (Inductor's decompositions, fake tensors), finds the
regions, runs the graph in float64 and checks that the description's reference gives the region's own value
bit for bit (the same ops in the same order). The cuDNN graph itself needs a GPU: benchmarks/conv_cudnn_fusion.py.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._inductor.decomposition import select_decomp_table
from torch.func import functional_call, functionalize
from torch.fx import Interpreter
from torch.fx.experimental.proxy_tensor import make_fx

from kernelopt.rewrite.conv_epilogue import ConvEpilogue, reference
from kernelopt.rewrite.conv_regions import conv_regions
from tests.test_graph_rewrites import Wrap

REPO = Path(__file__).resolve().parents[1]


class Recording(Interpreter):
    def __init__(self, gm):
        super().__init__(gm)
        self.values: dict[str, object] = {}

    def run_node(self, n):
        v = super().run_node(n)
        self.values[n.name] = v
        return v


def trace(model: nn.Module, inputs: list[torch.Tensor]):
    """The ATen graph of `model` in float64 (functionalized, as AOTAutograd hands it to Inductor: `relu_` is
    `relu`), and its real arguments."""
    model = model.double()
    params = dict(model.named_parameters()) | dict(model.named_buffers())
    names = list(params)

    def f(*args):
        return functional_call(model, dict(zip(names, args[:len(names)], strict=True)), tuple(args[len(names):]))
    args = [params[n].detach() for n in names] + [x.double() for x in inputs]
    import torch._inductor.lowering  # noqa: F401  (registers the decompositions a max pool traces through)

    gm = make_fx(functionalize(f, remove="mutations_and_views"), tracing_mode="fake",
                 decomposition_table=select_decomp_table())(*args)
    return gm, args


def check_regions(model: nn.Module, inputs: list[torch.Tensor]):
    """The regions of the model's graph, each fusable one's reference checked against the graph's own value."""
    gm, args = trace(model, inputs)
    regions = conv_regions(gm)
    rec = Recording(gm)
    with torch.no_grad():
        rec.run(*args)
    nodes = {n.name: n for n in gm.graph.nodes}
    for r in regions:
        if not r.fusable:
            continue
        conv = nodes[r.conv]
        x, w, b = (rec.values[a.name] if a is not None else None for a in conv.args[:3])
        e = ConvEpilogue.from_dict(json.loads(json.dumps(r.epilogue.to_dict())))  # the description is plain data
        got = reference(e, x, w, b, [rec.values[o] for o in r.operand_nodes])
        expected = rec.values[r.nodes[-1]]
        assert got.dtype == expected.dtype and torch.equal(got, expected), (r.nodes, e.summary())
    return regions


class Scale(nn.Module):
    """A per-channel scale: a (C, 1, 1) parameter multiplied in."""

    def __init__(self, c: int):
        super().__init__()
        self.s = nn.Parameter(torch.randn(c, 1, 1))

    def forward(self, x):
        return x * self.s


def ops(r) -> list[str]:
    return [s.op for s in r.epilogue.steps]


def test_a_bias_and_an_activation_chain_are_one_region():
    conv = nn.Conv2d(4, 6, 3, padding=1)
    model = Wrap(lambda m, x: torch.tanh(m[1](F.relu(m[0](x))) + 0.5) * 2.0, conv, Scale(6))
    [r] = check_regions(model, [torch.randn(2, 4, 9, 9)])
    assert r.fusable and r.epilogue.conv.bias
    assert ops(r) == ["relu", "mul", "add", "tanh", "mul"]
    assert r.epilogue.operand_shapes == [[6, 1, 1]]


def test_an_in_place_relu_is_traced_functional_and_joins_the_region():
    conv = nn.Conv2d(3, 4, 3, padding=1)
    [r] = check_regions(nn.Sequential(conv, nn.ReLU(inplace=True)), [torch.randn(1, 3, 6, 6)])
    assert r.fusable and ops(r) == ["relu"]


def test_mish_and_hardswish_decompose_into_regions_that_branch_and_join():
    conv = nn.Conv2d(4, 8, 3, groups=2)
    [r] = check_regions(Wrap(lambda m, x: F.mish(m[0](x) - 0.5) * 2.0, conv), [torch.randn(2, 4, 8, 8)])
    assert {"where", "log1p", "tanh"} <= set(ops(r)) and r.epilogue.conv.groups == 2
    conv3 = nn.ConvTranspose3d(3, 4, 3, stride=2, padding=1, output_padding=1)
    [r] = check_regions(Wrap(lambda m, x: F.gelu(F.hardswish(m[0](x))), conv3), [torch.randn(1, 3, 4, 4, 4)])
    assert r.fusable and r.epilogue.conv.transposed and r.epilogue.dims == 3


def test_powers_clamps_and_activations_with_parameters_are_evaluated_as_the_graph_does():
    conv = nn.Conv1d(3, 5, 3, stride=2, dilation=2)
    fn = Wrap(lambda m, x: (lambda y: F.leaky_relu(y, 0.2) ** 2 + F.gelu(y, approximate="tanh")
                            + torch.clamp(F.silu(y), -0.5, 0.5) + torch.maximum(y, torch.sigmoid(y)))(m[0](x)), conv)
    [r] = check_regions(fn, [torch.randn(2, 3, 17)])
    assert r.fusable and r.epilogue.dims == 1 and {"pow", "max", "min"} <= set(ops(r))


def test_a_convolution_read_elsewhere_or_reduced_has_no_region():
    conv = nn.Conv2d(3, 4, 3)
    first, second = check_regions(Wrap(lambda m, x: (F.relu(m[0](x)), m[0](x).sum()), conv), [torch.randn(1, 3, 6, 6)])
    assert first.fusable and not second.fusable  # called twice: each call is a region of its own
    assert second.reason == "no pointwise operation follows the convolution"
    y_twice = Wrap(lambda m, x: (lambda y: (torch.sigmoid(y), y))(m[0](x)), conv)
    [r] = check_regions(y_twice, [torch.randn(1, 3, 6, 6)])
    assert not r.fusable and "read by more than its epilogue" in r.reason
    centred = Wrap(lambda m, x: (lambda y: torch.relu(y - y.mean(dim=(2, 3), keepdim=True)))(m[0](x)), conv)
    [r] = check_regions(centred, [torch.randn(1, 3, 6, 6)])
    assert not r.fusable and r.reason


def test_a_value_read_outside_the_region_ends_it_there():
    conv = nn.Conv2d(3, 4, 3)
    model = Wrap(lambda m, x: (lambda t: (t * 3.0, t.amax(dim=1)))(torch.tanh(m[0](x) * 2.0)), conv)
    [r] = check_regions(model, [torch.randn(1, 3, 6, 6)])
    assert r.fusable and ops(r) == ["mul", "tanh"]


def test_an_operand_that_would_grow_the_output_is_not_taken_in():
    conv = nn.Conv2d(3, 4, 3)
    [r] = check_regions(Wrap(lambda m, x, z: m[0](x) + z, conv), [torch.randn(1, 3, 6, 6), torch.randn(2, 4, 4, 4)])
    assert not r.fusable


@pytest.mark.parametrize("problem, fusable, first_ops", [
    ("level2/18_conv_grouped_subtract_mish_scale.py", True, ["sub", "exp", "log1p"]),
    ("level2/30_convtranspose2d_gelu_scale_tanh.py", True, ["mul"]),
    ("level2/11_conv_scale_min.py", True, ["mul"]),
    ("level2/03_conv_bn_relu.py", False, []),
])
def test_the_suites_convolution_problems(problem, fusable, first_ops):
    """The regions of real problems' graphs, as the capture would hand them over (small inputs, same graph)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("p", REPO / "benchmarks" / "problems" / problem)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.manual_seed(0)
    model = mod.Model(*mod.get_init_inputs())
    x = mod.get_inputs()[0]
    small = torch.randn(2, *x.shape[1:2], *[min(s, 10) for s in x.shape[2:]])
    [r] = check_regions(model, [small])
    assert r.fusable == fusable, r.reason
    if fusable:
        assert ops(r)[:len(first_ops)] == first_ops


TINY = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.b = nn.Conv2d(8, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)

    def forward(self, x):
        return self.bn(self.b(F.mish(self.a(x) - 0.5) * 2.0))


def get_inputs():
    return [torch.randn(2, 3, 12, 12)]


def get_init_inputs():
    return []
'''


def test_the_fusion_benchmark_times_each_region_and_counts_what_cudnn_cannot_hold(tmp_path):
    """Its CPU smoke mode: the capture's graph read, Inductor's side timed (a pointwise region, and a
    convolution a training-mode BatchNorm reads), cuDNN's rows saying why not."""
    from benchmarks.conv_cudnn_fusion import main

    problem = tmp_path / "tiny.py"
    problem.write_text(TINY)
    assert main([str(problem), "--device", "cpu", "--out", str(tmp_path / "out")]) == 0
    rows = json.loads((tmp_path / "out" / "cudnn_fusion.json").read_text())["rows"]
    timed, bn = [r for r in rows if "ms" in r]
    assert timed["region"].startswith("conv2d(s1,p1,g1,bias) -> sub -> exp -> log1p")
    assert bn["region"] == "conv2d 8->8 k3x3 s1 g1 @12x12 -> BN(train) -> ReLU"
    assert bn["ms"]["inductor"] > 0 and bn["err64"]["inductor"] < 1e-5 and len(bn["errors"]) == 2
    assert timed["ms"]["inductor"] > 0 and timed["err64"]["inductor"] < 1e-5
    assert set(timed["errors"]) == {"cudnn nchw->nchw", "cudnn cl->cl", "cudnn cl->nchw"}
    [held_out] = [r for r in rows if "not_fusable" in r]
    assert held_out["not_fusable"] == {"the convolution's output is read by more than its epilogue": 1}
    assert "| tiny.py | conv2d" in (tmp_path / "out" / "cudnn_fusion.md").read_text()
    # bf16 on both sides: the baseline's error is bf16's, not fp32's, and the table says which data it timed
    assert main([str(problem), "--device", "cpu", "--dtype", "bf16", "--out", str(tmp_path / "bf16")]) == 0
    report = json.loads((tmp_path / "bf16" / "cudnn_fusion.json").read_text())
    timed16 = next(r for r in report["rows"] if "ms" in r)
    assert report["dtype"] == "bf16" and 1e-5 < timed16["err64"]["inductor"] < 5e-2
    assert (tmp_path / "bf16" / "cudnn_fusion.md").read_text().startswith("Data: bf16 on both sides")


def _frontend():
    return pytest.importorskip("cudnn", reason="nvidia-cudnn-frontend is not installed (device_carry.sh carries it)")


@pytest.mark.gpu
def test_cudnns_fused_region_computes_the_description():
    """The fused graph of a bias + branching epilogue on channels-last operands (what cuDNN's fused engines
    take) against the description's reference (fp32, TF32 off for both: the comparison is of the epilogue, not
    of TF32 rounding). Other layouts cuDNN may refuse: the benchmark records that as a row."""
    from kernelopt.kernels.cudnn_fused import CudnnConvEpilogue

    _frontend()
    conv = nn.Conv2d(16, 32, 3, padding=1)
    gm_model = Wrap(lambda m, x: F.mish(m[0](x) - 0.5) * 2.0, conv)
    gm, _ = trace(gm_model, [torch.randn(2, 16, 12, 12)])
    [r] = conv_regions(gm)
    x = torch.randn(4, 16, 20, 20, device="cuda")
    w = torch.randn(32, 16, 3, 3, device="cuda") / 12
    b = torch.randn(32, device="cuda")
    xl, wl = x.contiguous(memory_format=torch.channels_last), w.contiguous(memory_format=torch.channels_last)
    with torch.backends.cudnn.flags(allow_tf32=False):
        expected = reference(r.epilogue, x, w, b, [])
        got = CudnnConvEpilogue(r.epilogue, xl, wl, b, [], out_layout="channels_last")(xl, wl, b, [])
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, rtol=1e-2, atol=1e-2)  # loose enough for a TF32 engine


@pytest.mark.gpu
@pytest.mark.parametrize("prologue", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cudnns_conv_genstats_writes_the_output_and_its_channel_sums(prologue, dtype):
    """conv -> genstats against F.conv2d and the sums, or a typed refusal carrying cuDNN's reason: on an H100
    (cuDNN 9.19, frontend 1.23) no engine took genstats on fp32 data (benchmarks/results/2026-12-07-h100-cudnn-
    helion-resnet)."""
    from kernelopt.kernels.cudnn_fused import CudnnConvGenstats, NotSupportedByCudnn, batch_stats_reference

    _frontend()
    cl = torch.channels_last
    x = (torch.randn(4, 16, 20, 20, device="cuda") + 0.3).to(dtype).contiguous(memory_format=cl)
    w = (torch.randn(32, 16, 3, 3, device="cuda") / 12).to(dtype).contiguous(memory_format=cl)
    scale, bias = (torch.rand(16, device="cuda") + 0.5).to(dtype), (torch.randn(16, device="cuda") * 0.1).to(dtype)
    act = x.float()
    if prologue:  # in fp32, then in the data's dtype as the convolution reads it
        act = torch.relu(act * scale.float().view(1, -1, 1, 1) + bias.float().view(1, -1, 1, 1)).to(dtype).float()
    tol = 1e-2 if dtype == torch.float32 else 5e-2
    with torch.backends.cudnn.flags(allow_tf32=False):
        y_expected = F.conv2d(act, w.float(), padding=1)
        try:
            fused = CudnnConvGenstats(x, w, [1, 1], [1, 1], [1, 1], prologue=prologue)
        except NotSupportedByCudnn as exc:
            assert "No valid engine configs" in str(exc) or "NOT_SUPPORTED" in str(exc), exc
            pytest.skip(f"cuDNN has no genstats engine for {dtype} here: {str(exc).splitlines()[0]}")
        y, total, sq_total = fused(x, w, scale, bias) if prologue else fused(x, w)
    s_expected, sq_expected = batch_stats_reference(y_expected)
    torch.testing.assert_close(y.float(), y_expected, rtol=tol, atol=tol)  # loose enough for a TF32 engine
    torch.testing.assert_close(total.float(), s_expected, rtol=tol, atol=float(s_expected.abs().max()) * tol / 10)
    torch.testing.assert_close(sq_total.float(), sq_expected, rtol=tol,
                               atol=float(sq_expected.abs().max()) * tol / 10)
