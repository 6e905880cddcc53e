"""Fused convolutions on cuDNN's frontend: a convolution with its pointwise epilogue, and a convolution with the
per-channel statistics a training-mode BatchNorm needs.

- `CudnnConvEpilogue(e, x, w, b, operands, out_layout)` builds the cuDNN frontend operation graph
  (`conv_fprop`/`conv_dgrad → bias → pointwise chain`) of a `ConvEpilogue` (rewrite/conv_epilogue.py) for
  those tensors' shapes and strides, with cuDNN's heuristics' plans, and runs it (`__call__`).
- `CudnnConvGenstats` builds `conv_fprop → genstats`, optionally with the previous layer's BatchNorm and ReLU as
  the convolution's prologue.

They need a GPU and `nvidia-cudnn-frontend` (imported only when one is built): this file imports torch alone.
Math: the epilogue and statistics in fp32; the convolution as the frontend's heuristics pick its engine for
fp32 data with fp32 compute (TF32 tensor cores or not: `benchmarks/conv_cudnn_fusion.py` states each one's
error against float64).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import torch

from kernelopt.kernels.conv_emulated import channels_last_format
from kernelopt.rewrite.conv_epilogue import ConvEpilogue, Ref, Step, convolution


class NotSupportedByCudnn(Exception):
    """cuDNN's frontend would not build this graph for these tensors (the reason is its message)."""


class CudnnConvEpilogue:
    """The region as one cuDNN operation graph, built for the given tensors' shapes, strides and dtype.

    `out_layout`: "channels_last" (what cuDNN's fused engines run on) or "contiguous" (the model's own NCHW:
    the graph is then asked to write it, and cuDNN may refuse). The bias is added in the graph as a
    per-channel `bias` node; constants are passed by value.
    """

    def __init__(self, e: ConvEpilogue, x: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor],
                 operands: Sequence[torch.Tensor], out_layout: str = "channels_last"):
        import cudnn  # nvidia-cudnn-frontend: only where a fused call is built

        self.e = e
        dt = _cudnn_dtype(cudnn, x.dtype)
        self.handle, g = _new_graph(cudnn, dt)
        c = e.conv
        X = g.tensor(name="X", dim=list(x.shape), stride=list(x.stride()), data_type=dt)
        W = g.tensor(name="W", dim=list(w.shape), stride=list(w.stride()), data_type=dt)
        self.inputs: list[tuple[Any, str, int]] = [(X, "x", 0), (W, "w", 0)]
        out_shape = tuple(convolution(e, x.to("meta"), w.to("meta"), None).shape)
        if c.transposed:
            if c.groups != 1:
                raise NotSupportedByCudnn("a grouped transposed convolution (conv_dgrad takes groups = 1)")
            Y = g.conv_dgrad(loss=X, filter=W, padding=c.padding, stride=c.stride, dilation=c.dilation,
                             compute_data_type=cudnn.data_type.FLOAT)
            Y.set_dim(list(out_shape))
        else:
            Y = g.conv_fprop(image=X, weight=W, padding=c.padding, stride=c.stride, dilation=c.dilation,
                             compute_data_type=cudnn.data_type.FLOAT)
        if c.bias:
            assert b is not None
            bview = _channel_view(b, e.dims)
            B = g.tensor(name="B", dim=list(bview.shape), stride=list(bview.stride()), data_type=dt)
            self.inputs.append((B, "b", 0))
            Y = g.bias(input=Y, bias=B)
        values: list[Any] = []
        ops_in: list[Any] = []
        for i, o in enumerate(operands):
            o = _full_rank(o, len(out_shape))
            T = g.tensor(name=f"O{i}", dim=list(o.shape), stride=list(o.stride()), data_type=dt)
            self.inputs.append((T, "operand", i))
            ops_in.append(T)

        self.scalars: list[tuple[Any, torch.Tensor]] = []  # pass-by-value constants and their host values

        def const(v: float) -> Any:
            T = g.tensor(name=f"C{len(self.scalars)}", dim=[1] * len(out_shape), stride=[1] * len(out_shape),
                         is_pass_by_value=True, data_type=cudnn.data_type.FLOAT)
            self.scalars.append((T, torch.full([1] * len(out_shape), float(v), dtype=torch.float32)))
            return T

        def get(r: Ref) -> Any:
            return {"conv": lambda: Y, "step": lambda: values[r.index], "operand": lambda: ops_in[r.index],
                    "const": lambda: const(r.value)}[r.kind]()

        for s in e.steps:
            values.append(_cudnn_step(g, const, s, [get(r) for r in s.args], [r.kind == "const" for r in s.args]))
        out = values[-1] if values else Y
        self.out_shape = out_shape
        self.out_stride = _strides(out_shape, out_layout)
        out.set_output(True).set_data_type(dt).set_dim(list(out_shape)).set_stride(list(self.out_stride))
        self.out = out
        self.graph, self.workspace = _built(cudnn, g, x.device)

    def __call__(self, x: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor],
                 operands: Sequence[torch.Tensor], out: Optional[torch.Tensor] = None) -> torch.Tensor:
        if out is None:
            out = torch.empty_strided(self.out_shape, self.out_stride, dtype=x.dtype, device=x.device)
        pack: dict[Any, torch.Tensor] = {self.out: out}
        for t, role, i in self.inputs:
            if role == "x":
                pack[t] = x
            elif role == "w":
                pack[t] = w
            elif role == "b":
                assert b is not None
                pack[t] = _channel_view(b, self.e.dims)
            else:
                pack[t] = _full_rank(operands[i], len(self.out_shape))
        pack.update(self.scalars)
        self.graph.execute(pack, self.workspace, handle=self.handle)
        return out


def _new_graph(cudnn: Any, dt: Any) -> tuple[Any, Any]:
    """A cuDNN handle on torch's current stream, and an empty graph of `dt` data computed in fp32."""
    handle = cudnn.create_handle()
    cudnn.set_stream(handle=handle, stream=torch.cuda.current_stream().cuda_stream)
    return handle, cudnn.pygraph(io_data_type=dt, intermediate_data_type=cudnn.data_type.FLOAT,
                                 compute_data_type=cudnn.data_type.FLOAT, handle=handle)


def _built(cudnn: Any, g: Any, device: torch.device) -> tuple[Any, torch.Tensor]:
    """`g` validated and built with the heuristics' plans, and its workspace; a graph the frontend will not
    build raises NotSupportedByCudnn with the frontend's own words."""
    try:
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        g.check_support()
        g.build_plans(cudnn.build_plan_policy.HEURISTICS_CHOICE)
    except Exception as exc:  # cudnnGraphNotSupportedError, RuntimeError
        raise NotSupportedByCudnn(f"{type(exc).__name__}: {exc}") from exc
    return g, torch.empty(g.get_workspace_size(), device=device, dtype=torch.uint8)


def _channel_view(b: torch.Tensor, dims: int) -> torch.Tensor:
    """A per-channel vector as (1, C, 1, ...): what the graph's bias node broadcasts."""
    return b.reshape([1, -1] + [1] * dims)


def _full_rank(o: torch.Tensor, rank: int) -> torch.Tensor:
    """An operand with leading size-1 dims up to the output's rank (cuDNN's tensors state every dim)."""
    return o.reshape([1] * (rank - o.dim()) + list(o.shape))


def _strides(shape: Sequence[int], layout: str) -> tuple[int, ...]:
    if layout == "contiguous":
        return tuple(torch.empty(shape, device="meta").stride())
    return tuple(channels_last(torch.empty(shape, device="meta")).stride())


def _cudnn_dtype(cudnn: Any, dtype: torch.dtype) -> Any:
    return {torch.float32: cudnn.data_type.FLOAT, torch.float16: cudnn.data_type.HALF,
            torch.bfloat16: cudnn.data_type.BFLOAT16}[dtype]


def _cudnn_step(g: Any, const: Any, s: Step, a: list[Any], is_const: list[bool]) -> Any:
    """One step as cuDNN pointwise nodes. Numbers arrive as pass-by-value tensors (`const`); where the number
    comes first, the op is rewritten so the tensor does (cuDNN broadcasts its second operand)."""
    op = s.op
    if op in ("add", "sub", "mul", "div") and is_const[0] and not is_const[1]:
        if op in ("add", "mul"):
            a = [a[1], a[0]]
        elif op == "sub":  # c - t = (-t) + c
            return g.add(a=g.neg(input=a[1]), b=a[0])
        else:  # c / t = reciprocal(t) * c
            return g.mul(a=g.reciprocal(input=a[1]), b=a[0])
    if op in ("add", "sub", "mul", "div"):
        return getattr(g, op)(a=a[0], b=a[1])
    if op in ("max", "min"):
        if is_const[0]:
            a = [a[1], a[0]]
        return getattr(g, op)(input0=a[0], input1=a[1])
    if op in ("gt", "lt", "ge", "le"):
        return getattr(g, f"cmp_{op}")(input=a[0], comparison=a[1])
    if op == "where":
        return g.binary_select(input0=a[1], input1=a[2], mask=a[0])
    if op == "pow":
        return g.pow(input0=a[0], input1=a[1])
    if op == "log1p":  # cuDNN has no log1p: log(1 + t) (less exact where t is tiny; Gate 3 judges it)
        return g.log(input=g.add(a=a[0], b=const(1.0)))
    if op == "silu":
        return g.swish(input=a[0])
    if op == "gelu":
        return g.gelu(input=a[0]) if s.attrs.get("approximate", "none") == "none" else g.gelu_approx_tanh(input=a[0])
    if op == "leaky_relu":
        return g.leaky_relu(input=a[0], negative_slope=float(s.attrs.get("negative_slope", 0.01)))
    if op in ("relu", "sigmoid", "tanh", "exp", "log", "erf", "neg", "abs", "sqrt", "rsqrt", "reciprocal"):
        return getattr(g, op)(input=a[0])
    raise NotSupportedByCudnn(f"no cuDNN pointwise op for {op!r}")


# --------------------------------------------------------------------------- convolution + BatchNorm statistics

def batch_stats_reference(y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-channel sum and sum of squares of `y` over every dim but 1 (what cuDNN's `genstats` writes)."""
    dims = [0] + list(range(2, y.dim()))
    return y.sum(dims), (y * y).sum(dims)


def bn_apply(y: torch.Tensor, total: torch.Tensor, sq_total: torch.Tensor, gamma: torch.Tensor,
             beta: torch.Tensor, eps: float, relu: bool) -> torch.Tensor:
    """A training-mode BatchNorm (biased variance) from the statistics' sums, then an optional ReLU."""
    n = y.numel() // y.shape[1]
    shape = [1, -1] + [1] * (y.dim() - 2)
    mean = total / n
    var = (sq_total / n - mean * mean).clamp_min(0)
    out = (y - mean.view(shape)) * (torch.rsqrt(var + eps) * gamma).view(shape) + beta.view(shape)
    return torch.relu(out) if relu else out


class CudnnConvGenstats:
    """`y = conv(act(x))` and y's per-channel sum and sum of squares, as one cuDNN graph (`conv_fprop →
    genstats`), on channels-last operands.

    With `prologue`, act(x) = relu(x · scale + bias) per channel: the previous layer's BatchNorm and ReLU
    applied as the convolution reads its raw output, so a network's conv → BN(train) → ReLU → conv chain
    writes and reads each convolution's output once (cuDNN's ConvBNfprop pattern). Without it, act(x) = x.
    """

    def __init__(self, x: torch.Tensor, w: torch.Tensor, stride: Sequence[int], padding: Sequence[int],
                 dilation: Sequence[int], groups: int = 1, prologue: bool = False):
        import cudnn  # nvidia-cudnn-frontend: only where a fused call is built

        dt = _cudnn_dtype(cudnn, x.dtype)
        self.handle, g = _new_graph(cudnn, dt)
        X = g.tensor(name="X", dim=list(x.shape), stride=list(x.stride()), data_type=dt)
        W = g.tensor(name="W", dim=list(w.shape), stride=list(w.stride()), data_type=dt)
        self.tensors: dict[str, Any] = {"x": X, "w": W}
        inp = X
        if prologue:
            c = x.shape[1]
            per_channel = torch.empty([1, c] + [1] * (x.dim() - 2), device="meta")
            per_channel = channels_last(per_channel)
            for name in ("scale", "bias"):
                self.tensors[name] = g.tensor(name=name, dim=list(per_channel.shape),
                                              stride=list(per_channel.stride()), data_type=dt)
            inp = g.relu(input=g.bias(input=g.scale(input=X, scale=self.tensors["scale"]),
                                      bias=self.tensors["bias"]))
        Y = g.conv_fprop(image=inp, weight=W, padding=list(padding), stride=list(stride), dilation=list(dilation),
                         compute_data_type=cudnn.data_type.FLOAT)
        self.out_shape = tuple(torch.ops.aten.convolution(torch.empty(x.shape, device="meta"),
                                                          torch.empty(w.shape, device="meta"), None, list(stride),
                                                          list(padding), list(dilation), False,
                                                          [0] * (x.dim() - 2), groups).shape)
        self.out_stride = _strides(self.out_shape, "channels_last")
        Y.set_output(True).set_data_type(dt).set_dim(list(self.out_shape)).set_stride(list(self.out_stride))
        total, sq_total = g.genstats(input=Y)
        stats = channels_last(torch.empty([1, self.out_shape[1]] + [1] * (x.dim() - 2), device="meta"))
        for t in (total, sq_total):
            t.set_output(True).set_data_type(cudnn.data_type.FLOAT).set_dim(list(stats.shape)).set_stride(
                list(stats.stride()))
        self.tensors.update(y=Y, sum=total, sq_sum=sq_total)
        self.stats_shape = tuple(stats.shape)
        self.graph, self.workspace = _built(cudnn, g, x.device)

    def __call__(self, x: torch.Tensor, w: torch.Tensor, scale: Optional[torch.Tensor] = None,
                 bias: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        y = torch.empty_strided(self.out_shape, self.out_stride, dtype=x.dtype, device=x.device)
        total = torch.empty(self.stats_shape, dtype=torch.float32, device=x.device)
        sq_total = torch.empty(self.stats_shape, dtype=torch.float32, device=x.device)
        pack = {self.tensors["x"]: x, self.tensors["w"]: w, self.tensors["y"]: y, self.tensors["sum"]: total,
                self.tensors["sq_sum"]: sq_total}
        if "scale" in self.tensors:
            assert scale is not None and bias is not None
            pack[self.tensors["scale"]] = channels_last(_channel_view(scale, x.dim() - 2))
            pack[self.tensors["bias"]] = channels_last(_channel_view(bias, x.dim() - 2))
        self.graph.execute(pack, self.workspace, handle=self.handle)
        return y, total.flatten(), sq_total.flatten()


def channels_last(t: torch.Tensor) -> torch.Tensor:
    """`t` in the channels-last layout cuDNN's fused engines run on (NHWC, NDHWC)."""
    fmt = channels_last_format(t.dim())
    if fmt is None:
        raise NotSupportedByCudnn(f"no channels-last layout for a {t.dim()}-dim tensor (cuDNN's fused engines take NHWC)")
    return t.to(memory_format=fmt)
