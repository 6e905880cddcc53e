"""Gate 4's timing, baseline and candidate each in a process of its own (stage functions for child sessions).

The job's orchestrator (pipeline/gates.py:TimingSides) starts two child sessions, one per side, and drives the
rounds itself, alternating which side goes first: a side never shares a process with the other, with the
reference or with the comparison. In each child the harness takes hold of its timers — the CUDA event
methods, `torch.cuda.synchronize`, `time.perf_counter`, the L2-flush call — before the module it times (and
so any generated code) is imported, and times exactly the iterations the parent asks for: each iteration
flushes L2 and is bracketed by two CUDA events (wall clock on a machine without CUDA). The round's figure is
the median of its iterations, as `triton.testing.do_bench` reports. The parent measures each round's wall
time on its own clock as well: a side whose reported times the parent's clock contradicts is caught by
verify/gate4_perf.py:check_clock.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Callable

from kernelopt.core.timing import TimingMethod

#: the L2 flush buffer, as triton.testing.do_bench sizes it (256 MB, more than any GPU's L2)
FLUSH_BYTES = 256 * 1024 * 1024


@dataclass
class SideRequest:
    problem_path: str
    workdir: str
    side: str  # "baseline" | "candidate"
    replacements: dict[str, str] = field(default_factory=dict)
    candidate_dir: str | None = None
    dtype: str = "fp32"
    device: str = "cuda"


@dataclass
class SideReady:
    side: str
    method: TimingMethod
    estimate_ms: float  # one call's time, from a few warm calls


@dataclass
class RoundRequest:
    iterations: int
    warmup: int
    seed: int  # the round's inputs (fresh each round: a side cannot answer from a result computed before)


@dataclass
class RoundResult:
    side: str
    times_ms: list[float]  # one per timed iteration
    # values of the last timed call's outputs at PROBES evenly spaced positions of each floating output: the
    # parent compares them with the other side's for the same seed (the work was done on this round's inputs)
    probes: list[float] = field(default_factory=list)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ms)


class _Held:
    """The timing primitives, taken before anything timed is imported."""

    def __init__(self) -> None:
        import time

        import torch

        self.perf_counter = time.perf_counter
        self.manual_seed = torch.manual_seed
        self.cuda = torch.cuda.is_available()
        if self.cuda:
            self.event = torch.cuda.Event
            self.record = torch.cuda.Event.record
            self.elapsed = torch.cuda.Event.elapsed_time
            self.synchronize = torch.cuda.synchronize
            self.zero = torch.Tensor.zero_
            self.flush = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")


_STATE: dict[str, Any] = {}


def prepare_side(req: SideRequest) -> SideReady:
    """Hold the timers, then load the side's module and arguments; a few warm calls estimate its time."""
    held = _Held()  # first: nothing of the model or the candidate is imported yet
    from kernelopt.compiled import runtime
    from kernelopt.compiled.restitch import ModelContext

    ctx = ModelContext(req.problem_path, req.workdir, req.dtype, req.device)
    cctx = ctx.candidate(req.candidate_dir) if (req.side == "candidate" and req.candidate_dir) else ctx
    mod = cctx.module(req.replacements if req.side == "candidate" else None)
    output_map = list(cctx.captured.output_map)

    def caller(seed: int) -> Callable[[], list]:
        args = cctx.flat_args(ctx.inputs(seed))

        def call() -> list:
            outs = runtime.call_module(mod, args)  # one call of the module: the model's outputs picked from it
            return [outs[i] for i in output_map]

        return call

    _STATE.clear()
    _STATE.update(held=held, caller=caller, side=req.side)
    call = caller(0)
    call()  # compile, load kernels
    times, _ = _run(held, call, 5)
    return SideReady(req.side, "do_bench" if held.cuda else "cpu-wallclock", statistics.median(times))


@dataclass
class KernelSideRequest:
    """One side of a kernel file's Gate 4: the submitted file's `launch` (baseline) or a candidate file's."""

    problem_path: str
    side: str  # "baseline" | "candidate"
    candidate_source: str | None = None
    dtype: str = "fp32"
    device: str = "cuda"


def prepare_kernel_side(req: KernelSideRequest) -> SideReady:
    """Hold the timers, then import the side's kernel file; a few warm launches estimate its time."""
    held = _Held()
    from kernelopt.load.problem import dtype_from_name, import_problem, make_inputs, output_leaves
    from kernelopt.verify.kernel_outputs import import_source

    original = import_problem(req.problem_path, module_name="kernelopt_kfile_original")
    launch = (import_source(req.candidate_source, "final").launch if req.side == "candidate" and req.candidate_source
              else original.launch)

    def caller(seed: int) -> Callable[[], list]:
        xs = make_inputs(original, seed, req.device, dtype_from_name(req.dtype))
        return lambda: output_leaves(launch(*xs))

    _STATE.clear()
    _STATE.update(held=held, caller=caller, side=req.side)
    call = caller(0)
    call()  # compile, load kernels
    times, _ = _run(held, call, 5)
    return SideReady(req.side, "do_bench" if held.cuda else "cpu-wallclock", statistics.median(times))


def _run(held: _Held, call: Callable[[], list], n: int) -> tuple[list[float], list]:
    """n calls' times (ms) and the last call's outputs."""
    out: list = []
    if not held.cuda:
        times = []
        for _ in range(n):
            t0 = held.perf_counter()
            out = call()
            times.append((held.perf_counter() - t0) * 1e3)
        return times, out
    pairs = []
    for _ in range(n):
        start, end = held.event(enable_timing=True), held.event(enable_timing=True)
        held.zero(held.flush)
        held.record(start)
        out = call()
        held.record(end)
        pairs.append((start, end))
    held.synchronize()
    return [float(held.elapsed(s, e)) for s, e in pairs], out


#: output values sampled per floating output leaf (RoundResult.probes)
PROBES = 16


def probe_values(leaves: list) -> list[float]:
    """PROBES evenly spaced values of each floating output (as float64 Python floats)."""
    values: list[float] = []
    for t in leaves:
        if not getattr(t, "is_floating_point", lambda: False)() or t.numel() == 0:
            continue
        flat = t.detach().reshape(-1)
        step = max(flat.numel() // PROBES, 1)
        values += [float(v) for v in flat[::step][:PROBES].double().cpu().tolist()]
    return values


def time_round(req: RoundRequest) -> RoundResult:
    """On this round's inputs: `req.warmup` untimed iterations, then `req.iterations` timed ones (each with its L2
    flush); the last timed call's outputs probed."""
    held = _STATE["held"]
    call = _STATE["caller"](req.seed)
    # the RNG from the round's seed: a model drawing random numbers (dropout) draws the same on both sides, call
    # for call, as Gate 3 re-seeds before each run, so the last call's probes compare
    held.manual_seed(req.seed)
    _run(held, call, req.warmup)
    times, out = _run(held, call, req.iterations)
    return RoundResult(_STATE["side"], times, probe_values(out))
