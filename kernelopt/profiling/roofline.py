"""The memory roofline without Nsight Compute: bytes each kernel moves, and the device's bandwidth.

Inductor's pointwise and reduction kernels are memory-bound by construction, so
their floor is the time to move their bytes at the bandwidth the device
actually reaches. Both sides are measured, neither assumed:

- bytes: every tensor argument of every launch of a kernel during one model
  call, counted once per distinct buffer (twice for an `in_out_ptr`: read and
  written), at the extent its strides reach (a broadcast input counts once);
- bandwidth: the faster of a device-to-device copy and a read-only reduction
  over a buffer far larger than L2, timed with the one timing harness.

The count is a lower bound of DRAM traffic only if every element is touched
once; a kernel that reads part of a buffer, or hits L2, can appear to beat the
roofline (fraction > 1). Such a figure says the model of the kernel is off, and
the strategy then makes no decision from it.
"""
from __future__ import annotations

import types
from typing import Any, Callable

from kernelopt.core.timing import bench_interleaved

BANDWIDTH_PROBE_BYTES = 1 << 30  # far beyond the H200's 60 MB of L2


def extent_bytes(t) -> int:
    """Bytes of memory a tensor's shape and strides reach (a stride-0 dimension counts once)."""
    if t.numel() == 0:
        return 0
    span = 1 + sum((size - 1) * abs(stride) for size, stride in zip(t.shape, t.stride(), strict=True) if size > 1)
    return min(t.numel(), span) * t.element_size()


def launch_bytes(args: list[Any], arg_names: list[str]) -> int:
    """Bytes one launch moves: each distinct buffer once, an in/out buffer twice."""
    import torch

    per_buffer: dict[int, int] = {}
    for i, a in enumerate(args):
        if not isinstance(a, torch.Tensor):
            continue
        name = arg_names[i] if i < len(arg_names) else ""
        moved = extent_bytes(a) * (2 if name.startswith("in_out_ptr") else 1)
        per_buffer[a.data_ptr()] = max(per_buffer.get(a.data_ptr(), 0), moved)
    return sum(per_buffer.values())


class _ByteCounter:
    """Stands in for one kernel of the module; counts the bytes of each launch and forwards it."""

    def __init__(self, inner: Any, arg_names: list[str]):
        self.inner = inner
        self.arg_names = arg_names
        self.bytes = 0

    def run(self, *args, **kwargs):
        self.bytes += launch_bytes(list(args), self.arg_names)
        return self.inner.run(*args, **kwargs)

    def __getattr__(self, item):
        return getattr(self.inner, item)


def bytes_per_call(mod: types.ModuleType, kernel_args: dict[str, list[str]],
                   run: Callable[[], object]) -> dict[str, int]:
    """Bytes each named kernel moves during one `run()` of the module."""
    counters = {name: _ByteCounter(getattr(mod, name), names) for name, names in kernel_args.items()
                if hasattr(getattr(mod, name, None), "run")}
    for name, counter in counters.items():
        setattr(mod, name, counter)
    try:
        run()
    finally:
        for name, counter in counters.items():
            setattr(mod, name, counter.inner)
    return {name: c.bytes for name, c in counters.items()}


def measured_bandwidth_gbps(device: str = "cuda", nbytes: int = BANDWIDTH_PROBE_BYTES) -> float:
    """The faster of a copy and a read-only sum over `nbytes`, in GB/s, on this device."""
    import torch

    src = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    timing = bench_interleaved({"copy": lambda: dst.copy_(src), "read": lambda: src.sum()}, rounds=3)
    copy_gbps = 2 * nbytes / (timing.median_ms["copy"] * 1e-3) / 1e9
    read_gbps = nbytes / (timing.median_ms["read"] * 1e-3) / 1e9
    return max(copy_gbps, read_gbps)


def model_ceiling(share: float, roofline_fraction: float) -> float:
    """The model speedup if a kernel of time `share` ran exactly at the roofline (Amdahl)."""
    return 1.0 / (1.0 - share + share * roofline_fraction)
