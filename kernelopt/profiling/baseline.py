"""Stage 4 without Nsight Compute: where the compiled model's GPU time goes.

torch.profiler gives each GPU kernel's device time, Inductor's Triton kernels
by name and the vendor-library kernels (cuBLAS, cuDNN) by theirs; the Triton
launchers give registers, spills and shared memory. Runs in a child process.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from kernelopt.compiled import runtime
from kernelopt.compiled.restitch import ModelContext
from kernelopt.core.timing import bench_interleaved
from kernelopt.profiling import library_calls
from kernelopt.profiling.roofline import bytes_per_call, measured_bandwidth_gbps

PROFILE_ITERS = 10
ROOFLINE_MIN_L2_MULTIPLE = 4


@dataclass
class ProfileRequest:
    problem_path: str
    workdir: str
    triton_kernels: list[str]
    dtype: str = "fp32"
    device: str = "cuda"
    kernel_args: dict[str, list[str]] = field(default_factory=dict)  # kernel -> its argument names
    library_steps: dict[int, int] = field(default_factory=dict)  # library call's step index -> its line in call()


@dataclass
class KernelShare:
    name: str
    kind: str  # "triton" | "library" | "other"
    device_ms: float  # per model call
    share: float  # of the model's total GPU kernel time
    registers: int | None = None
    spills: int | None = None
    shared_bytes: int | None = None
    bytes_moved: int | None = None  # per model call (profiling.roofline)
    achieved_gbps: float | None = None
    roofline_fraction: float | None = None  # achieved / measured device bandwidth


@dataclass
class BaselineProfile:
    end_to_end_ms: float
    noise_pct: float
    timing_method: str
    gpu_total_ms: float
    kernels: list[KernelShare] = field(default_factory=list)
    library_share: float = 0.0
    triton_share: float = 0.0
    ncu: bool = False
    bandwidth_gbps: float | None = None  # measured on this device (profiling.roofline)
    notes: list[str] = field(default_factory=list)
    # each library call's share (step index as a string -> share), from its own launch (profiling.library_calls);
    # empty where not measured: a group then counts the whole library share as its upper bound
    library_calls: dict[str, float] = field(default_factory=dict)

    def call_share(self, step: int) -> float | None:
        """The share of the library call at `step`, where measured."""
        return self.library_calls.get(str(step)) if self.library_calls else None

    def share_of(self, name: str) -> float:
        return sum(k.share for k in self.kernels if k.name == name)

    def kernel(self, name: str) -> KernelShare | None:
        return next((k for k in self.kernels if k.name == name), None)


def _device_time_us(evt) -> float:
    return library_calls.event_us(evt, ("self_device_time_total", "self_cuda_time_total", "device_time_total",
                                        "cuda_time_total"))


def profile_baseline(req: ProfileRequest) -> BaselineProfile:
    import torch
    from torch.profiler import ProfilerActivity, profile

    ctx = ModelContext(req.problem_path, req.workdir, req.dtype, req.device)
    mod = ctx.module()
    inputs = ctx.inputs(0)
    args = ctx.flat_args(inputs)

    def run():
        return runtime.call_module(mod, args)

    timing = bench_interleaved({"baseline": run}, rounds=5)  # 3 rounds' MAD is the smaller of two deviations
    kernels: list[KernelShare] = []
    notes = ["Nsight Compute not used: per-kernel shares from torch.profiler, registers from the Triton launchers"]
    if torch.cuda.is_available():
        run()
        torch.cuda.synchronize()
        with warnings.catch_warnings():
            # torch 2.11 warns that a profiler without a schedule "clears events at the end of
            # each cycle": one cycle is all this uses, and the warning only clutters job logs.
            warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(PROFILE_ITERS):
                    run()
                torch.cuda.synchronize()
            averages = prof.key_averages()
        per_name: dict[str, float] = {}
        for evt in averages:
            us = _device_time_us(evt)
            if us > 0:
                per_name[evt.key] = per_name.get(evt.key, 0.0) + us
        total_us = sum(per_name.values()) or 1.0
        for name, us in sorted(per_name.items(), key=lambda kv: -kv[1]):
            kind = "triton" if name in req.triton_kernels else (
                "other" if name.lower().startswith(("memset", "memcpy")) else "library")
            ks = KernelShare(name, kind, us / 1e3 / PROFILE_ITERS, us / total_us)
            if kind == "triton":
                launcher = (getattr(getattr(mod, name, None), "launchers", None) or [None])[0]
                ks.registers = getattr(launcher, "n_regs", None)
                ks.spills = getattr(launcher, "n_spills", None)
                ks.shared_bytes = getattr(launcher, "shared", None)
            kernels.append(ks)
        gpu_total_ms = total_us / 1e3 / PROFILE_ITERS
        bandwidth = _add_roofline(kernels, mod, req, run, notes)
        library_calls = _library_call_shares(ctx, args, req, sum(k.share for k in kernels if k.kind == "library"),
                                             notes)
    else:
        bandwidth = None
        library_calls = {}
        gpu_total_ms = timing.median_ms["baseline"]
        notes.append("no GPU: no per-kernel device times")
    return BaselineProfile(
        end_to_end_ms=timing.median_ms["baseline"],
        noise_pct=timing.noise_pct["baseline"],
        timing_method=timing.method,
        gpu_total_ms=gpu_total_ms,
        kernels=kernels,
        library_share=sum(k.share for k in kernels if k.kind == "library"),
        triton_share=sum(k.share for k in kernels if k.kind == "triton"),
        bandwidth_gbps=bandwidth,
        notes=notes,
        library_calls=library_calls,
    )


def _library_call_shares(ctx: ModelContext, args: list, req: ProfileRequest, library_share: float,
                         notes: list[str]) -> dict[str, float]:
    """Each library call's share, from a second profile of the module with each call in a range of its own.
    Where that cannot be made, the profile stands without it (groups then use the library share as a bound)."""
    if not req.library_steps:
        return {}
    try:
        mod = ctx.module(transform=lambda source: library_calls.instrumented_source(source, req.library_steps))
        times = library_calls.call_times_us(lambda: runtime.call_module(mod, args), PROFILE_ITERS, cuda=True)
    except Exception as exc:  # noqa: BLE001 - the kernel shares stand without the per-call split
        notes.append(f"library calls not timed one by one ({type(exc).__name__}: {exc}): each library group "
                     "counts the whole library share as its bound")
        return {}
    shares = library_calls.call_shares(times, library_share)
    notes.append(f"{len(shares)} library call(s) timed one by one (a profiler range around each launch)")
    return shares


def _add_roofline(kernels: list[KernelShare], mod, req: ProfileRequest, run, notes: list[str]) -> float | None:
    """Bytes, achieved bandwidth and roofline fraction of each Triton kernel; the device's bandwidth.

    A figure the profile cannot make (a kernel object that does not launch through
    `run`, say) is left out with a note: the strategy then decides without it.
    """
    try:
        moved = bytes_per_call(mod, {k: req.kernel_args.get(k, []) for k in req.triton_kernels}, run)
        bandwidth = measured_bandwidth_gbps(req.device)
        # A kernel whose data could sit in L2 is not bound by DRAM bandwidth: no fraction for it.
        min_bytes = ROOFLINE_MIN_L2_MULTIPLE * _l2_bytes(req.device)
    except Exception as exc:  # noqa: BLE001 - the profile stands without the roofline
        notes.append(f"roofline not measured: {type(exc).__name__}: {exc}")
        return None
    for ks in kernels:
        if ks.kind == "triton" and moved.get(ks.name) and ks.device_ms > 0:
            ks.bytes_moved = moved[ks.name]
            ks.achieved_gbps = ks.bytes_moved / (ks.device_ms * 1e-3) / 1e9
            if ks.bytes_moved >= min_bytes:
                ks.roofline_fraction = ks.achieved_gbps / bandwidth
    notes.append(f"memory roofline: {bandwidth:.0f} GB/s measured on this device (copy or read, the faster); "
                 f"fractions only for kernels moving at least {min_bytes / 1e6:.0f} MB "
                 f"({ROOFLINE_MIN_L2_MULTIPLE}x L2)")
    return bandwidth


def _l2_bytes(device: str) -> int:
    import torch

    return int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 0)
