"""The rewrite catalogue (kernelopt/rewrite/): every identity against float64 on random draws, and near misses
where none may fire (issue 34).

Each draw builds a small model, traces it to the ATen graph Inductor would receive (Inductor's
decompositions, fake tensors: nothing compiles), rewrites the graph, runs it in float64 and compares it with
eager PyTorch: an identity is exact in real arithmetic, so float64 agrees to ~1e-15 relative. Shapes,
strides, padding, dilation, output_padding, groups, cropping, keepdim and the ops between are drawn.
"""
from __future__ import annotations

import random

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._inductor.decomposition import select_decomp_table
from torch.func import functional_call
from torch.fx.experimental.proxy_tensor import make_fx

from kernelopt.rewrite.catalogue import CATALOGUE
from kernelopt.rewrite.conv_channels import DIRECT_MAX_TAPS, PADDED_OUT
from kernelopt.rewrite.graph_rewrite import Dependence, rewrite_graph

DRAWS = 50
EXACT = 1e-11  # relative to the output's largest value: float64 reassociation only


class Wrap(nn.Module):
    """A model from a function of its submodules and inputs."""

    def __init__(self, fn, *mods):
        super().__init__()
        self.fn = fn
        self.m = nn.ModuleList(mods)

    def forward(self, *x):
        return self.fn(self.m, *x)


def rewrite(model: nn.Module, inputs: list[torch.Tensor]):
    """(what rewrite_graph reports, max relative error of the rewritten graph against eager), in float64."""
    model = model.double()
    inputs = [x.double() for x in inputs]
    params = dict(model.named_parameters()) | dict(model.named_buffers())
    names = list(params)

    def f(*args):
        return functional_call(model, dict(zip(names, args[:len(names)], strict=True)), tuple(args[len(names):]))
    args = [params[n].detach() for n in names] + inputs
    gm = make_fx(f, tracing_mode="fake", decomposition_table=select_decomp_table())(*args)
    result = rewrite_graph(gm)
    with torch.no_grad():
        expected = model(*inputs)
        got = gm(*args)
    got = got[0] if isinstance(got, (list, tuple)) else got
    assert got.shape == expected.shape
    scale = max(float(expected.abs().max()), 1e-30)
    return result, float((got - expected).abs().max()) / scale


def applied(result) -> list[str]:
    return [a.identity for a in result.applied]


def test_the_catalogue_states_each_identity_and_its_conditions():
    assert [i.name for i in CATALOGUE] == ["size-one-reduction", "gemm-row-map", "conv-spatial-reduction",
                                           "conv-channel-reduction", "conv-avgpool-compose",
                                           "convtranspose-avgpool-compose", "diag-operand"]
    assert all(i.statement and len(i.conditions) > 40 for i in CATALOGUE)


# ---- gemm-row-map: a linear map of each output row of a GEMM, applied to its weights ----

def _row_chain(rng: random.Random, n: int):
    """A random chain of per-row linear ops on [..., n] features, ending in fewer features than n (or not)."""
    pre = rng.sample([lambda y: y * 1.5, lambda y: y / 3.0, lambda y: y + 2.0, lambda y: -y, lambda y: 0.5 - y],
                     k=rng.randint(0, 2))
    shift = nn.Parameter(torch.randn(n)) if rng.random() < 0.4 else None
    gain = nn.Parameter(torch.randn(n)) if rng.random() < 0.4 else None  # per feature, the same for every row
    kind = rng.choice(["sum", "mean", "group", "pool"])
    groups = rng.choice([g for g in (1, 2, 4) if n % g == 0])
    k = rng.randint(1, min(4, n))
    pad = rng.randint(0, k // 2)
    ceil, incl = rng.random() < 0.5, rng.random() < 0.5
    keep = rng.random() < 0.5

    def chain(y, holder):
        for op in pre:
            y = op(y)
        if shift is not None:
            y = y + holder.shift  # read through the module: the trace lifts it as a parameter
        if gain is not None:
            y = y * holder.gain
        if kind == "sum":
            return y.sum(-1, keepdim=keep)
        if kind == "mean":
            return y.mean(dim=-1, keepdim=keep)
        if kind == "group":
            return y.reshape(*y.shape[:-1], groups, n // groups).mean(-1)
        flat = y.reshape(-1, 1, n)
        pooled = F.avg_pool1d(flat, k, stride=k, padding=pad, ceil_mode=ceil, count_include_pad=incl)
        return pooled.reshape(*y.shape[:-1], pooled.shape[-1])
    return chain, shift, gain, kind


def test_gemm_row_map_is_exact_for_every_draw():
    fired = 0
    for seed in range(DRAWS):
        rng = random.Random(seed)
        m, k, n = rng.randint(1, 6), rng.randint(1, 7), rng.choice([4, 6, 8, 12, 16])
        chain, shift, gain, kind = _row_chain(rng, n)
        form = rng.choice(["linear", "linear3d", "matmul", "bmm"])
        torch.manual_seed(seed)
        holder = nn.Module()
        holder.shift, holder.gain = shift, gain
        if form == "bmm":
            model = Wrap(lambda mods, a, b, chain=chain: chain(torch.bmm(a, b), mods[0]), holder)
            inputs = [torch.randn(2, m, k), torch.randn(2, k, n)]
        elif form == "matmul":
            holder.w = nn.Parameter(torch.randn(n, k))
            model = Wrap(lambda mods, x, chain=chain: chain(x @ mods[0].w.T, mods[0]), holder)
            inputs = [torch.randn(m, k)]
        else:
            lin = nn.Linear(k, n, bias=rng.random() < 0.7)
            model = Wrap(lambda mods, x, chain=chain: chain(mods[1](x), mods[0]), holder, lin)
            inputs = [torch.randn(m, k) if form == "linear" else torch.randn(2, m, k)]
        result, err = rewrite(model, inputs)
        assert err < EXACT, f"draw {seed} ({form}, {kind}): relative error {err:.2e}"
        fired += "gemm-row-map" in applied(result)
    assert fired >= 30, f"the identity fired on only {fired} of {DRAWS} draws"


# ---- conv-spatial-reduction ----

def _conv_draw(rng: random.Random):
    dims = rng.choice([1, 2, 3])
    groups = rng.choice([1, 2])
    cin, cout = groups * rng.randint(1, 3), groups * rng.randint(1, 3)
    k = rng.randint(1, 4)
    stride, dilation = rng.randint(1, 3), rng.randint(1, 2)
    padding = rng.randint(0, k)
    transposed = rng.random() < 0.5
    low = max(3, dilation * (k - 1) + 1)
    size = rng.randint(low, low + (5 if dims < 3 else 2))
    conv_cls = [[nn.Conv1d, nn.Conv2d, nn.Conv3d], [nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d]]
    if transposed:
        out_pad = rng.randint(0, max(stride, dilation) - 1)
        padding = min(padding, dilation * (k - 1))  # a transposed convolution crops at most its kernel's span
        conv = conv_cls[1][dims - 1](cin, cout, k, stride=stride, padding=padding, output_padding=out_pad,
                                     dilation=dilation, groups=groups, bias=rng.random() < 0.7)
    else:
        padding = min(padding, k // 2 + 1)
        conv = conv_cls[0][dims - 1](cin, cout, k, stride=stride, padding=padding, dilation=dilation,
                                     groups=groups, bias=rng.random() < 0.7)
    x = torch.randn(rng.randint(1, 3), cin, *[size + rng.randint(0, 2) for _ in range(dims)])
    return conv, x, dims


def test_conv_spatial_reduction_is_exact_for_every_draw():
    fired = 0
    for seed in range(DRAWS):
        rng = random.Random(1000 + seed)
        torch.manual_seed(seed)
        conv, x, dims = _conv_draw(rng)
        spatial = list(range(2, 2 + dims))
        reduced = sorted(rng.sample(spatial, rng.randint(1, dims)))
        keep, mean = rng.random() < 0.5, rng.random() < 0.5
        scale = rng.choice([None, 0.5, -2.0])
        holder = nn.Module()
        holder.bias = nn.Parameter(torch.randn(conv.out_channels, *[1] * dims)) if rng.random() < 0.4 else None
        # a multiplier constant along the reduced dims: per channel, or per sample and channel
        lead = rng.choice([[], [x.shape[0]]])
        holder.gain = nn.Parameter(torch.randn(*lead, conv.out_channels, *[1] * dims)) if rng.random() < 0.5 else None
        divide = rng.random() < 0.3

        def fn(mods, x, reduced=reduced, keep=keep, mean=mean, scale=scale, divide=divide):
            y = mods[0](x)
            if scale is not None:
                y = y * scale
            if mods[1].bias is not None:
                y = y + mods[1].bias
            if mods[1].gain is not None:
                y = y / mods[1].gain if divide else mods[1].gain * y
            return y.mean(reduced, keepdim=keep) if mean else y.sum(reduced, keepdim=keep)
        model = Wrap(fn, conv, holder)
        result, err = rewrite(model, [x])
        assert err < EXACT, f"draw {seed} ({conv}, reduced {reduced}): relative error {err:.2e}"
        assert "conv-spatial-reduction" in applied(result), f"draw {seed}: {conv} reduced {reduced} did not fire"
        fired += 1
    assert fired == DRAWS


# ---- conv-channel-reduction ----

def test_conv_channel_reduction_is_exact_for_every_draw():
    for seed in range(DRAWS):
        rng = random.Random(3000 + seed)
        torch.manual_seed(seed)
        conv, x, dims = _conv_draw(rng)
        if conv.out_channels < 2:  # one output channel: nothing to sum
            conv = type(conv)(conv.in_channels, 2 * conv.groups, conv.kernel_size, stride=conv.stride,
                              padding=conv.padding, dilation=conv.dilation, groups=conv.groups,
                              bias=conv.bias is not None,
                              **({"output_padding": conv.output_padding} if conv.transposed else {}))
        spatial = list(range(2, 2 + dims))
        reduced = sorted([1] + rng.sample(spatial, rng.randint(0, dims)))
        keep, mean = rng.random() < 0.5, rng.random() < 0.5
        scale = rng.choice([None, 0.5, -2.0])
        holder = nn.Module()
        holder.bias = nn.Parameter(torch.randn(conv.out_channels, *[1] * dims)) if rng.random() < 0.4 else None
        shift = rng.choice([None, 1.5])
        # per-channel multipliers, before and after the added terms (folded into the summed taps)
        holder.gain = nn.Parameter(torch.randn(conv.out_channels, *[1] * dims)) if rng.random() < 0.5 else None
        holder.gain2 = nn.Parameter(torch.randn(conv.out_channels, *[1] * dims)) if rng.random() < 0.4 else None

        def fn(mods, x, reduced=reduced, keep=keep, mean=mean, scale=scale, shift=shift):
            y = mods[0](x)
            if mods[1].gain is not None:
                y = y * mods[1].gain
            if scale is not None:
                y = y * scale
            if mods[1].bias is not None:
                y = y + mods[1].bias
            if shift is not None:
                y = shift - y
            if mods[1].gain2 is not None:
                y = y / mods[1].gain2
            return y.mean(reduced, keepdim=keep) if mean else y.sum(reduced, keepdim=keep)
        model = Wrap(fn, conv, holder)
        result, err = rewrite(model, [x])
        assert err < EXACT, f"draw {seed} ({conv}, reduced {reduced}): relative error {err:.2e}"
        assert "conv-channel-reduction" in applied(result), f"draw {seed}: {conv} reduced {reduced} did not fire"


def test_a_channel_mean_of_a_convolution_becomes_one_output_channel():
    result, err = rewrite(Wrap(lambda m, x: m[0](x).mean(1, keepdim=True), nn.ConvTranspose3d(4, 8, 3, stride=2)),
                          [torch.randn(2, 4, 5, 5, 5)])
    (a,) = result.applied
    assert err < EXACT and a.identity == "conv-channel-reduction" and a.where.count("8 -> 1 output channels)")
    assert a.flops_after * 7 < a.flops_before


WIDE_CHANNEL_SUMS = {  # the convolution, how its one output channel is computed, its FLOPs over the rewrite's
    "3x3": (nn.Conv2d(4, 64, 3, padding=1, groups=2), "9 taps summed over the input channels", None),
    "7x7": (nn.Conv2d(4, 64, 7, padding=3, groups=2), f"computed {PADDED_OUT} wide", 64 // (PADDED_OUT * 2)),
    "transposed": (nn.ConvTranspose2d(4, 64, 3, stride=2, groups=2), f"computed {PADDED_OUT} wide",
                   64 // (PADDED_OUT * 2)),
}


@pytest.mark.parametrize("case", WIDE_CHANNEL_SUMS)
def test_a_wide_channel_sum_is_computed_by_taps_or_in_a_padded_convolution(case):
    """Sixteen output channels or more (cuDNN runs one output channel off the tensor cores, measured): a forward
    convolution of up to DIRECT_MAX_TAPS taps as its taps' shifted input slices summed over the channels (no
    convolution left: 0 matmul/conv FLOPs), else channel 0 of a PADDED_OUT-wide convolution with zero taps beside
    it (C_out / (PADDED_OUT * groups) times less work: it sees every input channel). Exact either way."""
    assert 9 <= DIRECT_MAX_TAPS < 49  # the cases below: 3x3 by taps, 7x7 padded
    conv, how, ratio = WIDE_CHANNEL_SUMS[case]
    x = torch.randn(2, 4, 9, 9)
    result, err = rewrite(Wrap(lambda m, x: m[0](x).mean(1), conv), [x])
    (a,) = result.applied
    assert err < EXACT and f"64 -> 1 output channels, {how}" in a.where
    assert a.flops_after * ratio == a.flops_before if ratio else a.flops_after == 0


# ---- conv-avgpool-compose ----

def test_conv_avgpool_compose_is_exact_for_every_draw():
    fired = tried = 0
    while fired < DRAWS and tried < 20 * DRAWS:
        rng = random.Random(5000 + tried)
        tried += 1
        dims = rng.choice([2, 3])
        k, stride, dilation = rng.randint(1, 3), rng.randint(1, 2), rng.randint(1, 2)
        conv = (nn.Conv2d if dims == 2 else nn.Conv3d)(2, 3, k, stride=stride, padding=rng.randint(0, k - 1),
                                                       dilation=dilation, groups=rng.choice([1]),
                                                       bias=rng.random() < 0.7)
        k2 = rng.randint(2, 4)
        s2 = rng.randint(1, k2)
        ceil, incl = rng.random() < 0.3, rng.random() < 0.5
        pool = F.avg_pool2d if dims == 2 else F.avg_pool3d
        low = dilation * (k - 1) + 1 + stride * k2
        size = rng.randint(low, low + (5 if dims == 2 else 2))
        x = torch.randn(rng.randint(1, 2), 2, *[size] * dims)
        def fn(mods, x, pool=pool, k2=k2, s2=s2, ceil=ceil, incl=incl):
            return pool(mods[0](x), k2, s2, ceil_mode=ceil, count_include_pad=incl)
        model = Wrap(fn, conv)
        torch.manual_seed(tried)
        result, err = rewrite(model, [x])
        assert err < EXACT, f"draw {tried}: {conv}, pool {k2}/{s2}: relative error {err:.2e}"
        fired += "conv-avgpool-compose" in applied(result)
    assert fired == DRAWS, f"only {fired} of {tried} draws composed"


# ---- convtranspose-avgpool-compose ----

def test_convtranspose_avgpool_compose_is_exact_for_every_draw():
    fired = tried = 0
    while fired < DRAWS and tried < 20 * DRAWS:
        rng = random.Random(7000 + tried)
        tried += 1
        dims = rng.choice([1, 2, 3])
        groups = rng.choice([1, 2])
        k, stride, dilation = rng.randint(1, 4), rng.randint(1, 3), rng.randint(1, 2)
        padding = rng.randint(0, dilation * (k - 1))
        out_pad = rng.randint(0, max(stride, dilation) - 1)
        conv = [nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d][dims - 1](
            groups * rng.randint(1, 2), groups * rng.randint(1, 2), k, stride=stride, padding=padding,
            output_padding=out_pad, dilation=dilation, groups=groups, bias=rng.random() < 0.7)
        k2 = rng.randint(1, 4)
        s2 = stride * rng.randint(1, 2)
        ceil, scale = rng.random() < 0.3, rng.choice([None, 0.5, -3.0])
        pool = [F.avg_pool1d, F.avg_pool2d, F.avg_pool3d][dims - 1]
        x = torch.randn(rng.randint(1, 2), conv.in_channels, *[rng.randint(2, 7 if dims < 3 else 4)] * dims)

        def fn(mods, x, pool=pool, k2=k2, s2=s2, ceil=ceil, scale=scale):
            y = mods[0](x)
            return pool(y * scale if scale is not None else y, k2, s2, ceil_mode=ceil)
        torch.manual_seed(tried)
        try:
            fn([conv], x)
        except RuntimeError:  # the draw's pool does not fit the convolution's output (eager refuses it too)
            continue
        result, err = rewrite(Wrap(fn, conv), [x])
        assert err < EXACT, f"draw {tried}: {conv}, pool {k2}/{s2}: relative error {err:.2e}"
        fired += "convtranspose-avgpool-compose" in applied(result)
    assert fired == DRAWS, f"only {fired} of {tried} draws composed"


def test_a_stride_two_transposed_conv_and_its_2x2x2_average_pool_become_one_convolution():
    model = Wrap(lambda m, x: F.avg_pool3d(m[0](x) * 2.0, 2), nn.ConvTranspose3d(4, 8, 3, stride=2, padding=1))
    result, err = rewrite(model, [torch.randn(2, 4, 6, 6, 6)])
    (a,) = result.applied
    assert err < EXACT and a.identity == "convtranspose-avgpool-compose" and "taps [2, 2, 2], stride [1, 1, 1]" in a.where
    assert a.flops_after * 3 < a.flops_before and a.bytes_after < a.bytes_before


# ---- diag-operand and size-one-reduction ----

def test_diag_operand_is_exact_for_every_draw():
    for seed in range(DRAWS):
        rng = random.Random(9000 + seed)
        n, m = rng.randint(2, 9), rng.randint(1, 9)  # n = 1: a 1x1 'diagonal' traces differently
        left = rng.random() < 0.5
        model = Wrap((lambda mods, v, b: torch.diag(v) @ b) if left else (lambda mods, v, b: b @ torch.diag(v)))
        inputs = [torch.randn(n), torch.randn(n, m) if left else torch.randn(m, n)]
        result, err = rewrite(model, inputs)
        assert err < EXACT and applied(result) == ["diag-operand"], f"draw {seed}: {applied(result)}, {err:.2e}"


def test_size_one_reduction_is_exact_for_every_draw():
    ops = [lambda x, d, k: x.sum(d, keepdim=k), lambda x, d, k: x.mean(d, keepdim=k),
           lambda x, d, k: x.amax(d, keepdim=k), lambda x, d, k: x.amin(d, keepdim=k)]
    for seed in range(DRAWS):
        rng = random.Random(12000 + seed)
        rank = rng.randint(1, 4)
        shape = [rng.randint(2, 4) for _ in range(rank)]
        ones = rng.sample(range(rank), rng.randint(1, rank))
        for d in ones:
            shape[d] = 1
        op, keep = rng.choice(ops), rng.random() < 0.5
        model = Wrap(lambda mods, x, op=op, ones=ones, keep=keep: op(x * 2.0, ones, keep) + 1.0)
        result, err = rewrite(model, [torch.randn(shape)])
        assert err == 0.0 and "size-one-reduction" in applied(result), f"draw {seed}: {shape} over {ones}"


# ---- near misses: no identity may fire ----

def _used_twice(y: torch.Tensor) -> torch.Tensor:
    return y.sum(1, keepdim=True) * y


def _self_scaled(y: torch.Tensor) -> torch.Tensor:
    return y * y.amax((2, 3), keepdim=True)


NEAR_MISSES = {
    "relu between linear and sum": (Wrap(lambda m, x: torch.relu(m[0](x)).sum(1), nn.Linear(6, 8)),
                                    [torch.randn(4, 6)]),
    "sum over the batch": (Wrap(lambda m, x: m[0](x).sum(0), nn.Linear(6, 8)), [torch.randn(4, 6)]),
    "a view mixing rows and features": (Wrap(lambda m, x: m[0](x).reshape(8, 4).sum(1), nn.Linear(6, 8)),
                                        [torch.randn(4, 6)]),
    "the GEMM output used twice": (Wrap(lambda m, x: _used_twice(m[0](x)), nn.Linear(6, 8)), [torch.randn(4, 6)]),
    "training-mode batch norm between": (Wrap(lambda m, x: m[1](m[0](x)).mean((2, 3)), nn.Conv2d(2, 3, 3),
                                              nn.BatchNorm2d(3)), [torch.randn(2, 2, 7, 7)]),
    "a ReLU between a conv and its channel mean": (Wrap(lambda m, x: torch.relu(m[0](x)).mean(1), nn.Conv2d(2, 3, 3)),
                                                   [torch.randn(2, 2, 7, 7)]),
    "a channel sum over the batch too": (Wrap(lambda m, x: m[0](x).sum((0, 1)), nn.Conv2d(2, 3, 3)),
                                         [torch.randn(2, 2, 7, 7)]),
    "a per-position scale before the spatial mean": (Wrap(lambda m, x: (m[0](x) * m[1].weight.reshape(1, 1, 5, 1))
                                                          .mean((2, 3)), nn.Conv2d(2, 3, 3), nn.Linear(1, 5)),
                                                     [torch.randn(2, 2, 7, 7)]),
    # the taps a channel sum would fold in differ between positions, or between samples: no one convolution
    "a per-channel-and-position scale before the channel sum": (
        Wrap(lambda m, x: (m[0](x) * m[1].weight.reshape(1, 3, 1, 5)).sum(1), nn.Conv2d(2, 3, 3), nn.Linear(1, 15)),
        [torch.randn(2, 2, 7, 7)]),
    "a per-sample-and-channel scale before the channel sum": (
        Wrap(lambda m, x: (m[0](x) * m[1].weight.reshape(2, 3, 1, 1)).sum(1), nn.Conv2d(2, 3, 3), nn.Linear(1, 6)),
        [torch.randn(2, 2, 7, 7)]),
    "a scale computed from the conv's output": (Wrap(lambda m, x: _self_scaled(m[0](x)).mean((2, 3)),
                                                     nn.Conv2d(2, 3, 3)), [torch.randn(2, 2, 7, 7)]),
    "padded average pool after a conv": (Wrap(lambda m, x: F.avg_pool2d(m[0](x), 2, padding=1),
                                              nn.Conv2d(2, 3, 3)), [torch.randn(2, 2, 9, 9)]),
    "ceil-mode pool with a partial window": (Wrap(lambda m, x: F.avg_pool2d(m[0](x), 2, ceil_mode=True),
                                                  nn.Conv2d(2, 3, 3)), [torch.randn(2, 2, 9, 9)]),
    "a pool stride that is no multiple of the transposed conv's": (Wrap(lambda m, x: F.avg_pool2d(m[0](x), 3),
                                                                         nn.ConvTranspose2d(2, 3, 3, stride=2)),
                                                                    [torch.randn(2, 2, 5, 5)]),
    "a padded pool after a transposed conv": (Wrap(lambda m, x: F.avg_pool2d(m[0](x), 2, padding=1),
                                                   nn.ConvTranspose2d(2, 3, 3, stride=2)), [torch.randn(2, 2, 5, 5)]),
    "a per-row scale before a feature sum": (Wrap(lambda m, x: (m[0](x) * m[1].weight).sum(1), nn.Linear(6, 8),
                                                  nn.Linear(1, 4)), [torch.randn(4, 6)]),
    "a lower-triangular mask, not a diagonal": (Wrap(lambda m, a, b: torch.tril(a) @ b),
                                                [torch.randn(5, 5), torch.randn(5, 4)]),
    "a reduction over a dim larger than 1": (Wrap(lambda m, x: x.sum(1, keepdim=True)), [torch.randn(3, 2)]),
}


@pytest.mark.parametrize("name", NEAR_MISSES)
def test_no_identity_fires_on_a_near_miss(name):
    model, inputs = NEAR_MISSES[name]
    torch.manual_seed(0)
    result, err = rewrite(model, inputs)
    assert applied(result) == [] and err < EXACT, f"{name}: {applied(result)}"


def test_a_softmax_over_one_feature_is_found_to_depend_only_on_finiteness():
    model = Wrap(lambda m, x: torch.softmax(m[0](x).mean(1, keepdim=True), dim=1), nn.Linear(6, 8))
    result, err = rewrite(model, [torch.randn(4, 6)])
    assert err == 0.0 and applied(result)[0] == "gemm-row-map"
    # placeholders: weight, bias, x
    assert result.dependence == {0: Dependence.FINITE_ONLY, 1: Dependence.FINITE_ONLY, 2: Dependence.FINITE_ONLY}


def test_an_input_the_output_ignores_is_found():
    result, _ = rewrite(Wrap(lambda m, x, y: x * 2.0), [torch.randn(3), torch.randn(3)])
    assert result.dependence == {1: Dependence.NONE}


def test_each_rewrite_reports_the_work_before_and_after():
    result, _ = rewrite(Wrap(lambda m, x: m[0](x).sum(1), nn.Linear(64, 256)), [torch.randn(32, 64)])
    (a,) = result.applied
    assert a.flops_before == 2 * 32 * 64 * 256 and a.flops_after < a.flops_before / 100
    assert a.bytes_after < a.bytes_before and "256 -> 1 output columns" in a.where


def test_the_bench_counts_degenerate_models_apart_from_the_geomean():
    from kernelopt.pipeline.bench import summarize
    from kernelopt.pipeline.device import probe_device

    def row(name: str, speedup: float, findings: list[str], rewritten: bool) -> dict:
        return {"problem": name, "level": "level2", "wall_s": 10.0, "engine": "e",
                "result": {"outcome": "optimized", "cause": "speedup", "speedup": speedup, "timing": "measured",
                           "noise_pct": 0.1},
                "findings": findings, "rewrite_deployed": rewritten, "rewrites": ["gemm-row-map"] if rewritten else []}
    rows = [row("level2/a.py", 4.0, [], True), row("level2/b.py", 1.0, [], False),
            row("level2/c.py", 1000.0, ["the output depends on input 0 ... only through whether ..."], True)]
    summary = summarize(rows, 30.0, 1, probe_device())
    assert summary["geomean"]["all"] == pytest.approx(2.0)  # 4x and 1x; the degenerate 1000x apart
    assert summary["degenerate"] == ["level2/c.py"]
    assert summary["rewrites_deployed"] == ["level2/a.py", "level2/c.py"]
    assert "Degenerate models" in summary["text"] and "level2/c.py (1000.000x)" in summary["text"]
