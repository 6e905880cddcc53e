"""The benchmark suite holds the size classes real problems come in (today's KernelBench sizes).

Built on the meta device: shapes and bytes without allocating 12 GiB on a CI box.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch
import torch.nn as nn

SUITE = Path(__file__).parent.parent / "benchmarks" / "problems"
GiB = 1 << 30


def build(rel: str):
    spec = importlib.util.spec_from_file_location(f"suite_{rel.replace('/', '_')[:-3]}", SUITE / rel)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with torch.device("meta"):
        model = mod.Model(*mod.get_init_inputs())
        inputs = mod.get_inputs()
    return model, inputs


def input_bytes(inputs) -> int:
    return sum(x.numel() * x.element_size() for x in inputs if isinstance(x, torch.Tensor))


@pytest.mark.parametrize("rel", sorted(str(p.relative_to(SUITE)) for p in SUITE.glob("level*/*.py")))
def test_every_problem_builds_and_runs_on_the_meta_device(rel):
    model, inputs = build(rel)
    assert inputs and all(isinstance(x, torch.Tensor) for x in inputs)
    assert any(x.dtype == torch.float32 for x in inputs)  # fp32 data; class labels may be int64
    if "graph_break" in rel:  # .item() needs real data: the branch is the point of the problem
        with pytest.raises((RuntimeError, NotImplementedError)):
            model(*inputs)
        return
    outs = model(*inputs)
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    assert outs and all(isinstance(o, torch.Tensor) and o.device.type == "meta" and o.numel() > 0 for o in outs)


def test_the_suite_holds_the_large_classes():
    """Element-wise and normalization over 4–12 GiB, large- and small-K GEMMs, 3-D pooling,
    a grouped/strided/dilated transposed convolution, a graph break."""
    _, x = build("level1/20_leaky_relu_12gib.py")
    assert input_bytes(x) == 12 * GiB
    _, x = build("level1/21_rms_norm_4gib.py")
    assert input_bytes(x) == 4 * GiB
    _, (a, b) = build("level1/22_matmul_large_k.py")
    assert a.shape[1] == b.shape[0] == 524288 and a.shape[0] == b.shape[1] == 256
    _, (a, b) = build("level1/18_matmul_small_k.py")
    assert a.shape[1] <= 64
    model, x = build("level1/23_conv_transpose2d_grouped_dilated.py")
    conv = model.conv_transpose
    assert conv.groups > 1 and conv.stride[0] > 1 and conv.padding[0] > 0 and conv.dilation[0] > 1
    model, x = build("level1/24_max_pool3d.py")
    assert x[0].dim() == 5 and input_bytes(x) == 4 * GiB
    src = (SUITE / "level3" / "09_mlp_graph_break.py").read_text()
    assert ".item()" in src


def aten_ops(model, inputs) -> list[str]:
    """The aten operators (without overload) of one forward on the meta device, in order."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: list[str] = []

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    with Recorder(), torch.no_grad():
        model(*inputs)
    return seen


def modules_of(model, kind) -> list:
    return [m for m in model.modules() if type(m) is kind]


def test_the_suite_holds_convolutions_with_each_kind_of_epilogue():
    """Issue 27: 2-D and 3-D convolution and transposed convolution, grouped and depthwise, followed by a
    norm, a pool, an activation chain or a reduction, at today's KernelBench sizes (inputs < 2 GiB), in
    training mode; and two CNNs at level 3 (a ResNet basic-block stack, a depthwise-separable block)."""
    def conv_problem(rel, conv_kind):
        model, x = build(rel)
        assert model.training and input_bytes(x) < 2 * GiB, rel
        (conv,) = modules_of(model, conv_kind)
        return model, x, conv, aten_ops(model, x)

    model, x, conv, ops = conv_problem("level2/13_conv_instancenorm_gelu.py", nn.Conv2d)
    assert modules_of(model, nn.InstanceNorm2d) and ops[-1] == "gelu"
    model, x, conv, ops = conv_problem("level2/14_conv3d_maxpool_silu.py", nn.Conv3d)
    assert modules_of(model, nn.MaxPool3d) and ops[-1] == "silu"
    model, x, conv, ops = conv_problem("level2/15_convtranspose_batchnorm_relu.py", nn.ConvTranspose2d)
    assert conv.stride == (2, 2) and modules_of(model, nn.BatchNorm2d) and ops[-1] == "relu"
    model, x, conv, ops = conv_problem("level2/16_convtranspose3d_bias_hardswish_clamp_gelu.py",
                                       nn.ConvTranspose3d)
    assert conv.stride == (2, 2, 2) and ops[ops.index("convolution") + 1:] == ["add", "hardswish", "clamp", "gelu"]
    model, x, conv, ops = conv_problem("level2/17_conv_logsumexp.py", nn.Conv2d)
    assert "logsumexp" in ops and model(*x).shape[1] == 1  # reduced over the channels
    model, x, conv, ops = conv_problem("level2/18_conv_grouped_subtract_mish_scale.py", nn.Conv2d)
    assert 1 < conv.groups < conv.in_channels and ops[ops.index("convolution") + 1:] == ["sub", "mish", "mul"]

    # level 3: BatchNorm after every convolution, batch statistics (training mode)
    model, x = build("level3/10_resnet_basic_block_stack.py")
    convs, bns = modules_of(model, nn.Conv2d), modules_of(model, nn.BatchNorm2d)
    assert len(convs) >= 4 and len(bns) == len(convs) and all(bn.training for bn in bns)
    assert all(c.kernel_size == (3, 3) and c.in_channels == c.out_channels for c in convs)  # identity shortcuts
    assert model(*x).shape == x[0].shape and aten_ops(model, x).count("add") >= 2
    model, x = build("level3/11_depthwise_separable_block.py")
    depthwise, pointwise = modules_of(model, nn.Conv2d)
    assert depthwise.groups == depthwise.in_channels == depthwise.out_channels and depthwise.kernel_size == (3, 3)
    assert pointwise.groups == 1 and pointwise.kernel_size == (1, 1)
    assert len(modules_of(model, nn.BatchNorm2d)) == 2 and aten_ops(model, x).count("hardtanh") == 2  # ReLU6

    # the suite as a whole: every convolution kind, each with some epilogue class
    kinds: set = set()
    for p in sorted(SUITE.glob("level*/*.py")):
        model, _ = build(str(p.relative_to(SUITE)))
        kinds |= {type(m) for m in model.modules()}
    assert {nn.Conv2d, nn.Conv3d, nn.ConvTranspose2d, nn.ConvTranspose3d} <= kinds
    assert {nn.BatchNorm2d, nn.GroupNorm, nn.InstanceNorm2d, nn.MaxPool2d, nn.MaxPool3d} <= kinds


@pytest.mark.parametrize("rel", sorted(str(p.relative_to(SUITE)) for p in SUITE.glob("level*/*.py")))
def test_every_problem_runs_in_bf16_and_fp16_as_the_job_casts_it(rel):
    # `kernelopt bench --dtype bf16|fp16` casts the model and the float inputs (load.problem): a problem
    # mixing dtypes inside forward would fail there, on the GPU, after minutes of the device's time
    from kernelopt.load.problem import build_model, import_problem, make_inputs

    mod = import_problem(SUITE / rel, f"suite_cast_{rel.replace('/', '_')[:-3]}")
    for dtype in (torch.bfloat16, torch.float16):
        model, inputs = build_model(mod, "meta", dtype), make_inputs(mod, 0, "meta", dtype)
        assert all(x.dtype == dtype for x in inputs if x.is_floating_point())
        assert all(p.dtype == dtype for p in model.parameters())
        if "graph_break" in rel:  # .item() needs real data (see above)
            continue
        outs = model(*inputs)
        outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        assert outs and all(o.dtype == dtype for o in outs if o.is_floating_point()), [o.dtype for o in outs]
