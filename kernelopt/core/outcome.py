"""How a job ends: its outcome and the code its cause starts with (docs/architecture.md, Outcomes and causes).

The one list of both. A cause is shown as "<code>: <explanation>"; the dashboard and
`/v1/stats` group by the code, so a JobResult with an unknown code is refused where it is
made, not discovered later as a new group. The service imports these names too (without
torch: this module imports nothing of the engine).
"""
from __future__ import annotations

from enum import Enum


class _Named(str, Enum):
    """A str enum that prints as its bare value (in f-strings, JSON and comparisons with strings)."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class Outcome(_Named):
    OPTIMIZED = "optimized"  # all four gates, speedup >= gamma: the re-stitched module is deployed
    MATCHED = "matched"  # a correct candidate within Gate 4's noise: the compiler's code is kept
    FALLBACK = "fallback"  # the compiler's code is kept, for the cause given
    FAILED = "failed"  # the submission cannot run (or the job was cancelled)


class Cause(_Named):
    """Codes of `fallback` and `matched` causes."""

    NO_GPU = "no-gpu"
    GRAPH_BREAK = "graph-break"
    SEVERAL_GRAPHS = "several-graphs"
    NO_OUTPUT_MODULE = "no-output-module"
    NOT_REPRODUCIBLE = "not-reproducible"
    NO_TRITON_KERNELS = "no-triton-kernels"
    LIBRARY_DOMINATED = "library-dominated"
    NEAR_OPTIMAL = "near-optimal"
    TOO_SMALL_SHARE = "too-small-share"
    NO_CANDIDATES = "no-candidates"
    HARNESS_ERROR = "harness-error"
    NO_FASTER_CANDIDATE = "no-faster-candidate"
    CORRECTNESS_FAILURE = "correctness-failure"
    PERFORMANCE_GATE = "performance-gate"
    WITHIN_NOISE = "within-noise"
    TIMEOUT = "timeout"
    CRASH = "crash"


OUTCOMES: tuple[str, ...] = tuple(o.value for o in Outcome)


def cause_code(cause: str) -> str:
    """The code a cause text starts with ("no-gpu: ..." -> "no-gpu")."""
    return cause.split(":", 1)[0].strip()


def check_cause(outcome: Outcome, cause: str) -> None:
    """A fallback's or a match's cause must start with a known code (ValueError otherwise)."""
    if outcome in (Outcome.FALLBACK, Outcome.MATCHED):
        code = cause_code(cause)
        if code not in Cause._value2member_map_:
            raise ValueError(f"a {outcome} result's cause must start with one of the codes of "
                             f"core.outcome.Cause, got {code!r}")
