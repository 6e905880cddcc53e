"""Gates 1-2 and kernel timing for batches of candidates, in one long-lived child.

The child keeps the target kernel's captured inputs (three seeds, from the
real model) between batches; a candidate that crashes the process costs one
restart, and the batch is then replayed one candidate at a time so the
culprit is named and the others still get their verdicts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from kernelopt.compiled import runtime
from kernelopt.compiled.kernel_io import RecordedOnDemand, capture_kernel_io, clone_arg, output_indexes
from kernelopt.compiled.restitch import ModelContext
from kernelopt.core.timing import bench_interleaved
from kernelopt.core.tolerance import gate2_tolerance
from kernelopt.isolation import ChildError, ChildErrorKind, ChildSession
from kernelopt.search.generator import Attempt, Candidate, KernelTarget
from kernelopt.verify.gate1_static import check_static
from kernelopt.verify.gate2_kernel import check_kernel

KERNEL_ROUNDS = 3
KERNEL_WARMUP_MS = 5.0
KERNEL_REP_MS = 25.0


@dataclass
class EvalContext:
    """Everything the child needs besides the candidates (picklable)."""

    problem_path: str
    workdir: str
    target: KernelTarget
    seeds: list[int]
    dtype: str = "fp32"
    device: str = "cuda"
    rho_max: float = 10.0  # Gate 2's float64 branch, for targets whose reference runs in float64

    @property
    def reference_runs_in_float64(self) -> bool:
        """A library group with no Triton kernel: its statements are library calls, which take float64
        operands (a Triton kernel is compiled for its dtype) -- Gate 2's float64 branch applies."""
        group = self.target.group
        return bool(group) and group.get("anchor_kind") == "library" and len(group.get("kernels") or []) == 1


@dataclass
class EvalBatch:
    context: EvalContext
    candidates: list[Candidate]


@dataclass
class _KernelState:
    # KernelIO per seed: a list on the device, or RecordedOnDemand where the device cannot hold every seed
    ios: Any
    baseline: Any  # Inductor's kernel object (has .run)
    stream: Any = None
    baseline_ms: float | None = None
    device: str = "cuda"
    module: Any = None  # the output module the target was recorded in (group candidates bind to it)

    def load(self, source: str, name: str):
        return runtime.bind_candidate(runtime.load_kernel_module(source, name), self.module)

    def io(self, seed: int):
        """One seed's recorded launch, on the device."""
        return self.ios[seed]


# Gate 2 holds, besides the recorded seeds, two guarded copies of a launch's arguments
# (reference and candidate) and the expected outputs: about three launches' worth.
WORKING_SETS = 3
DEVICE_SHARE = 0.8  # of the memory free before recording, what the plan may take


def plan_one_seed_at_a_time(io_bytes: int, seeds: int, free_bytes: int | None) -> bool:
    """Whether the device cannot hold every seed's recorded launch: then one seed is held at a time
    (compiled.kernel_io.RecordedOnDemand)."""
    if free_bytes is None:
        return False
    return io_bytes * (seeds + WORKING_SETS) > DEVICE_SHARE * free_bytes


def _free_device_bytes(device: str) -> int | None:
    import torch

    if not (device.startswith("cuda") and torch.cuda.is_available()):
        return None
    return int(torch.cuda.mem_get_info()[0])


_STATE: dict[tuple, _KernelState] = {}


def _state(c: EvalContext) -> _KernelState:
    key = (c.workdir, c.target.name, tuple(c.seeds))
    if key not in _STATE:
        _STATE.clear()  # one target at a time: free the previous kernel's tensors first
        ctx = ModelContext(c.problem_path, c.workdir, c.dtype, c.device)
        # a library group runs as one launch: its reference (Inductor's own statements,
        # library call included) is installed in the module and recorded like a kernel
        mod = ctx.module({c.target.name: c.target.source} if c.target.is_group else None)
        free = _free_device_bytes(c.device)

        def record(seed: int):
            args = ctx.flat_args(ctx.inputs(seed))
            return capture_kernel_io(mod, c.target.name, lambda m: runtime.call_module(m, args),
                                     poison=output_indexes(c.target.arg_names))[0]

        first = record(c.seeds[0])
        ios: Any
        if plan_one_seed_at_a_time(first.nbytes(), len(c.seeds), free):  # every seed has the same shapes
            ios = RecordedOnDemand(record, c.seeds, first)
        else:
            ios = [first] + [record(seed) for seed in c.seeds[1:]]
        _STATE[key] = _KernelState(ios, getattr(mod, c.target.name), _raw_stream(c.device), device=c.device,
                                   module=mod)
    return _STATE[key]


def _raw_stream(device: str):
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.current_stream().cuda_stream
    return None


def evaluate_batch(batch: EvalBatch) -> list[Attempt]:
    """Child side: Gate 1 and Gate 2 for every candidate, then time the survivors."""
    state = _state(batch.context)
    tol = gate2_tolerance(batch.context.dtype)  # the job's dtype decides, not the kernel's buffers
    attempts: list[Attempt] = []
    passing: dict[str, Any] = {}
    for cand in batch.candidates:
        g1 = check_static(cand.source, state.io(0), cand.target, loader=state.load)
        if not g1.passed:
            attempts.append(Attempt(cand, False, "gate1", g1.message, metrics=g1.metrics))
            continue
        ctx = batch.context
        g2 = check_kernel(cand.source, state.ios, reference=state.baseline, rtol=tol.rtol, atol=tol.atol,
                          arg_names=ctx.target.arg_names,
                          name=cand.target, loader=state.load,
                          reference64=state.baseline if ctx.reference_runs_in_float64 else None,
                          rho_max=ctx.rho_max)
        if not g2.passed:
            attempts.append(Attempt(cand, False, "gate2", g2.message, metrics=g2.metrics))
            continue
        attempts.append(Attempt(cand, True, "timed", "passed gates 1-2", metrics=g2.metrics))
        passing[cand.id] = state.load(cand.source, cand.target)

    if passing:
        args = [clone_arg(a) for a in state.io(0).before]
        stream = state.stream
        fns = {"baseline": lambda: state.baseline.run(*args, stream=stream)}
        for cid, kmod in passing.items():
            fns[cid] = (lambda k: (lambda: k.run(*args, stream=stream)))(kmod)
        timing = bench_interleaved(fns, rounds=KERNEL_ROUNDS, warmup_ms=KERNEL_WARMUP_MS, rep_ms=KERNEL_REP_MS)
        for a in attempts:
            if a.passed:
                a.kernel_ms = timing.median_ms[a.candidate.id]
                a.baseline_kernel_ms = timing.median_ms["baseline"]
                a.metrics.update(timing_method=timing.method,
                                 kernel_speedup=timing.median_ms["baseline"] / a.kernel_ms,
                                 noise_pct=timing.noise_pct[a.candidate.id])
                a.feedback = (f"passed gates 1-2; {a.kernel_ms * 1e3:.1f} us vs baseline "
                              f"{a.baseline_kernel_ms * 1e3:.1f} us ({timing.method})")
    return attempts


@dataclass
class ChildEvaluator:
    """Parent side of the search's Evaluator: sends batches to a child session.

    `batch_fn(EvalBatch) -> list[Attempt]` runs in the child: `evaluate_batch`
    for Inductor sub-kernels, `pipeline.kernel_job.evaluate_kernel_file_batch`
    for single-kernel problems.
    """

    context: EvalContext
    batch_fn: Callable[[EvalBatch], list[Attempt]] = evaluate_batch
    env: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 300.0
    scratch: str | None = None  # the sandboxed child's writable directory (the job's work directory)
    read_only: tuple[str, ...] = ()  # what else it may read (the submission)

    def __post_init__(self) -> None:
        self._session = ChildSession(self.env, scratch=self.scratch, read_only=self.read_only)

    def evaluate(self, candidates: list[Candidate]) -> list[Attempt]:
        if not candidates:
            return []
        try:
            return self._session.call(self.batch_fn, EvalBatch(self.context, candidates),
                                      timeout_s=self.timeout_s)
        except ChildError as exc:
            if len(candidates) == 1 or exc.kind == ChildErrorKind.EXCEPTION:
                return [Attempt(c, False, "gate1", _crash_feedback(exc)) for c in candidates]
        # A crash or hang in a batch: replay one by one to find the culprit.
        out: list[Attempt] = []
        for cand in candidates:
            out.extend(self.evaluate([cand]))
        return out

    def close(self) -> None:
        self._session.close()


def _crash_feedback(exc: ChildError) -> str:
    if exc.kind == "crash":
        return f"the candidate crashed the process ({exc.message}); an illegal memory access or abort"
    if exc.kind == "timeout":
        return f"the candidate did not finish: {exc.message}"
    return f"evaluation failed: {exc.message}"
