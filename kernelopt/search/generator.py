"""The one small interface every candidate generator implements.

A generator proposes candidates for one target kernel: standalone Triton
kernel modules with the same launch interface as Inductor's kernel
(`run(*args, stream=None)`, pointer arguments then numels, same outputs and
strides), or for one library group (`KernelTarget.group`, compiled.group): a
module whose `run(*params, stream=None)` (optionally through
`bind(output_module)`) computes the group's outputs from its external buffers. It never decides what is correct or fast: every candidate from every
generator goes through the same gates. LLM agents plug in as another
generator (they read `history` for feedback and the profile for guidance).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Optional, Protocol

from kernelopt.core.tolerance import Dtype


class Gate(str, Enum):
    """Where an attempt ended (`Attempt.gate`): the one list of these names.

    A str enum, so trajectory records, reports and comparisons with plain strings
    ("gate1") keep working; `str()` is the bare value.
    """

    EXTRACT = "extract"  # the generator's output held no candidate (an LLM reply without one code block)
    DUPLICATE = "duplicate"  # same normalized source as an earlier candidate: never run again
    GATE1 = "gate1"  # compile + dry run
    GATE2 = "gate2"  # multi-seed correctness on real inputs
    TIMED = "timed"  # passed Gates 1-2 and was timed

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


@dataclass
class KernelTarget:
    """What a generator may know about the kernel it improves."""

    name: str  # Inductor's kernel name, e.g. triton_red_fused_mul_sum_0
    source: str  # Inductor's kernel module source (the async_compile.triton text)
    kind: str  # pointwise | reduction | persistent | template | ...
    arg_names: list[str]
    signature: dict[str, str]
    numels: list[int]  # the launch's trailing integer args
    size_hints: dict = field(default_factory=dict)
    inductor_meta: dict = field(default_factory=dict)
    baseline_config: dict = field(default_factory=dict)  # {"kwargs":..., "num_warps":..., "num_stages":...}
    aten_ops: list[str] = field(default_factory=list)
    profile: dict = field(default_factory=dict)  # time share, registers, ncu metrics when present
    # A library group (compiled.group.LibraryGroup.to_dict()): the target is then the
    # group `name`, launched as `run(*params)` with `arg_names` giving each param's role;
    # `source` is the group's reference module (Inductor's own statements).
    group: dict = field(default_factory=dict)
    precision: str = "strict"  # the job's precision policy: what a generator may propose
    dtype: str = "fp32"  # the job's dtype (core.tolerance.Dtype value): models and inputs were cast to it

    @property
    def is_group(self) -> bool:
        return bool(self.group)

    def data_dtypes(self) -> set[str]:
        """The floating-point dtypes the target computes on: the job's, and those its group's buffers are
        stated in (Dtype values; another float dtype under torch's name, e.g. "float64")."""
        found = {self.dtype}
        for name in (self.group.get("param_dtypes") or {}).values():
            if "float" in name or name in ("half", "double"):  # integer/bool buffers (indices) carry no arithmetic
                known = Dtype.of_torch_name(name)
                found.add(known.value if known else name)
        return found


@dataclass
class Candidate:
    target: str  # kernel name
    source: str  # standalone module defining run(*args, stream=None)
    generator: str
    description: str
    params: dict[str, Any] = field(default_factory=dict)
    parent: Optional[str] = None  # id of the candidate it was derived from
    chain: int = 0  # search chain (for DiverseSelect)
    # Set by a generator that already knows this is no candidate (an LLM reply without
    # exactly one code block): the search records it as a failed attempt at gate
    # "extract" with this reason, and never sends it to the gates.
    rejected: Optional[str] = None

    @property
    def id(self) -> str:
        import hashlib

        return hashlib.sha256(self.source.encode()).hexdigest()[:12]


@dataclass
class Attempt:
    """A candidate and what the gates and the timer said about it."""

    candidate: Candidate
    passed: bool
    gate: str  # a Gate: the last gate run (gate1 | gate2 | timed), or extract | duplicate (never run)
    feedback: str  # failure text for the generator, or a summary
    kernel_ms: Optional[float] = None  # median kernel time (Gate-2-passing candidates)
    baseline_kernel_ms: Optional[float] = None
    metrics: dict = field(default_factory=dict)


class CandidateGenerator(Protocol):
    name: str

    def applicable(self, target: KernelTarget) -> Optional[str]:
        """None if the generator can work on `target`, else the reason it cannot."""

    def propose(self, target: KernelTarget, beam: list[Attempt], history: list[Attempt],
                budget: int) -> list[Candidate]:
        """Up to `budget` new candidates, derived from the beam's best and the history."""
