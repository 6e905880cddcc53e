"""The options of one job, and what a job reports as it runs and when it ends."""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Optional

from kernelopt.core.outcome import Outcome, check_cause
from kernelopt.core.precision import PrecisionPolicy
from kernelopt.core.tolerance import Dtype
from kernelopt.search.registry import available, default_generators


def _default_generators() -> list[str]:
    return default_generators()  # the registry's own list, not a copy


@dataclass
class JobOptions:
    dtype: str = "fp32"  # a core.tolerance.Dtype value: fp32 | bf16 | fp16
    precision: str = "strict"  # strict | tf32 (docs/architecture.md, Precision policies)
    time_budget_s: float = 900.0  # whole job, compile included
    generators: list[str] = field(default_factory=lambda: _default_generators())  # search.registry
    gamma: float = 1.03  # Gate 4: required end-to-end speedup
    rho_max: float = 10.0
    seeds: list[int] = field(default_factory=lambda: [1, 2, 3])  # Gate 2/3 input seeds
    # search (docs/architecture.md, Search)
    iterations: int = 5  # T
    plans_per_iteration: int = 4  # N, divided over the active chains
    beam_width: int = 4  # B
    max_candidates_per_kernel: int = 24
    chains: int = 1  # search chains per kernel (at least one per generator; DiverseSelect keeps each one's best)
    executor_retries: int = 4  # K: gate failures fed back to the LLM executor per plan
    memory_size: int = 8  # Q: experience items per kernel in the planner's prompt
    memory_success: float = 1.05  # s+: kernel speedup stored as a success
    memory_slowdown: float = 1.20  # s-: kernel slowdown stored as a slowdown
    meltdown_failures: int = 8  # a chain whose last this-many attempts failed is stopped (0: never)
    device: str = "auto"  # auto | cuda | interpreter

    def __post_init__(self) -> None:
        # the one definition of the policies (docs/architecture.md, Precision policies)
        PrecisionPolicy.parse(self.precision)
        self.dtype = Dtype.parse(self.dtype).value  # the one definition of the dtypes (and their tolerances)
        for name in ("time_budget_s", "gamma", "rho_max", "memory_success", "memory_slowdown"):
            if not math.isfinite(getattr(self, name)):  # NaN passes every comparison below
                raise ValueError(f"{name} must be a finite number (not NaN or Infinity)")
        if min(self.iterations, self.plans_per_iteration, self.beam_width, self.max_candidates_per_kernel) < 1:
            raise ValueError("iterations, plans_per_iteration, beam_width and max_candidates_per_kernel must be >= 1")
        if self.gamma < 1.0:
            raise ValueError("gamma must be >= 1.0: a candidate must be faster, not merely close")
        if self.time_budget_s <= 0:
            raise ValueError("time_budget_s must be positive")
        if min(self.chains, self.memory_size) < 1 or min(self.executor_retries, self.meltdown_failures) < 0:
            raise ValueError("chains and memory_size must be >= 1; executor_retries and meltdown_failures >= 0")
        if self.memory_success < 1.0 or self.memory_slowdown < 1.0:
            raise ValueError("memory_success and memory_slowdown are ratios >= 1.0")
        unknown = [g for g in self.generators if g not in available()]
        if unknown or not self.generators:
            raise ValueError(f"unknown generators {unknown}; available: {', '.join(available())}" if unknown
                             else "generators must name at least one generator")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "JobOptions":
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown job options: {sorted(unknown)}")
        return cls(**data)


@dataclass
class JobEvent:
    """Progress of a job: a stage starting or ending, a candidate's verdict, a log line."""

    stage: str  # load | compile | decompose | profile | search | restitch | verify | report
    kind: str  # stage_started | stage_finished | progress | log
    message: str
    data: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)


EventSink = Callable[[JobEvent], None]
CancelCheck = Callable[[], bool]


TIMING_MEASURED = "measured"
TIMING_NOT_MEASURED = "not-measured"
# Why a job reports no speed: said in report.md, the console, the API's job record and `submit`.
NO_GPU_TIMING = "no GPU: the Triton interpreter checks correctness only"
NO_TIMING_FAILED = "the job failed before anything was timed"
NO_TIMING_NO_DEVICE = "the job ended before its device was probed"


@dataclass
class JobResult:
    """How a job ended. Speed is either measured on a GPU or absent, never made up.

    `timing` is "measured" when `speedup` is the speedup actually deployed, on a GPU:
    Gate 4's when optimized, 1.0 when the compiler's own code is kept (the times are
    the profile's or Gate 4's medians where the job got that far). It is
    "not-measured" when no speed can be claimed (no GPU, or the job failed): then
    `speedup`, `baseline_ms`, `optimized_ms` and `noise_pct` are None and
    `timing_note` says why.
    """

    outcome: Outcome | str  # a core.outcome.Outcome (a plain value is converted)
    cause: str  # why: "<code>: ..." (a core.outcome.Cause code) for fallback/matched; else free text
    speedup: Optional[float] = None  # deployed, vs the compiler baseline; None when not measured
    baseline_ms: Optional[float] = None
    optimized_ms: Optional[float] = None
    noise_pct: Optional[float] = None
    precision: str = "strict"
    dtype: str = "fp32"  # the job's dtype: a result means little without it (nor without its policy)
    reduced_precision: bool = False
    artifacts: list[str] = field(default_factory=list)  # file names in the job's workdir
    stage_seconds: dict[str, float] = field(default_factory=dict)
    error: Optional[str] = None  # for outcome "failed": the clear message for the user
    timing: str = ""  # measured | not-measured; default: measured iff a speedup is given
    timing_note: Optional[str] = None  # for not-measured: why

    def __post_init__(self) -> None:
        self.outcome = Outcome(self.outcome)  # ValueError on an unknown outcome
        check_cause(self.outcome, self.cause)
        if not self.timing:
            self.timing = TIMING_MEASURED if self.speedup is not None else TIMING_NOT_MEASURED
        if self.timing not in (TIMING_MEASURED, TIMING_NOT_MEASURED):
            raise ValueError(f"timing must be measured or not-measured, got {self.timing!r}")
        if self.timing == TIMING_NOT_MEASURED:
            self.not_measured(self.timing_note)

    def not_measured(self, note: Optional[str]) -> "JobResult":
        """Drop every speed and time: none of them was measured (`note` says why)."""
        self.speedup = self.baseline_ms = self.optimized_ms = self.noise_pct = None
        self.timing, self.timing_note = TIMING_NOT_MEASURED, note
        return self

    @property
    def measured(self) -> bool:
        return self.timing == TIMING_MEASURED

    def to_dict(self) -> dict:
        return asdict(self)


def not_measured(result: dict, note: str) -> dict:
    """A JobResult dict with its speeds and times dropped (for results built outside the engine)."""
    return {**result, "speedup": None, "baseline_ms": None, "optimized_ms": None, "noise_pct": None,
            "timing": TIMING_NOT_MEASURED, "timing_note": note}
