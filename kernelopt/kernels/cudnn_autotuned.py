"""A cuDNN convolution whose algorithm is timed per shape instead of picked by cuDNN's heuristic.

PyTorch's default (`torch.backends.cudnn.benchmark = False`) asks cuDNN's heuristic for one
algorithm per convolution; Inductor's `extern_kernels.convolution` inherits it. With benchmark
mode on, cuDNN runs every algorithm that applies to the shape once (`benchmark_limit = 0`:
all of them, not the heuristic's first ten), keeps the fastest, and reuses it for every later
call of that shape in the process. The arithmetic family is unchanged: the algorithm runs under
the caller's math mode (`torch.backends.cudnn.allow_tf32`), the one the baseline's convolution
ran under, so this construction neither lowers nor raises the precision of the call it replaces
(different algorithms order their sums differently: Gate 3 compares with eager and float64).

`ConvAutotuned` is the object a candidate module calls in place of Inductor's
`extern_kernels.convolution` (search/generators/cudnn_autotune.py): same arguments, the result returned in
the strides the output module asserts for the library call's output. This file imports only torch
and the standard library: candidates embed it verbatim, so the deployed module needs no KernelOPT.
"""
from __future__ import annotations

import contextlib
from typing import Iterator, Optional

import torch


@contextlib.contextmanager
def cudnn_benchmark_scope() -> Iterator[None]:
    """cuDNN benchmark mode over all algorithms inside, the caller's flags restored after (the math mode,
    `allow_tf32`, is left as the caller set it)."""
    flags = torch.backends.cudnn
    old = flags.benchmark, flags.benchmark_limit
    flags.benchmark, flags.benchmark_limit = True, 0
    try:
        yield
    finally:
        flags.benchmark, flags.benchmark_limit = old


def _per_dim(v, spatial: int) -> list:
    t = list(v) if isinstance(v, (list, tuple)) else [v]
    return t * spatial if len(t) == 1 else t


class ConvAutotuned:
    """`extern_kernels.convolution(...)` with cuDNN's algorithm chosen by timing (benchmark mode)."""

    def __init__(self) -> None:
        self.last_method: Optional[str] = None

    def convolution(self, input, weight, bias=None, stride=(1,), padding=(0,), dilation=(1,), transposed=False,
                    output_padding=(0,), groups=1, out_stride=None):
        spatial = input.dim() - 2
        with cudnn_benchmark_scope():
            r = torch.convolution(input, weight, bias, _per_dim(stride, spatial), _per_dim(padding, spatial),
                                  _per_dim(dilation, spatial), bool(transposed), _per_dim(output_padding, spatial),
                                  int(groups))
        self.last_method = "cudnn-benchmark" if r.is_cuda else "cpu (no cuDNN: the plain convolution)"
        if out_stride is None or tuple(r.stride()) == tuple(out_stride):
            return r
        # the epilogue kernels index the library call's output by the strides Inductor asserted for it
        out = torch.empty_strided(r.shape, tuple(out_stride), device=r.device, dtype=r.dtype)
        return out.copy_(r)
