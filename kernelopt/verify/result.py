"""The one result type every gate returns."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

# The gates of docs/architecture.md, Gates: one name each.
GateName = Literal["gate1", "gate2", "gate3", "gate4"]


@dataclass
class GateResult:
    """A gate's verdict.

    `message` is feedback a generator (LLM or built-in) can act on: what was
    wrong, where, by how much and for which seed; for a pass, a one-line summary.
    `metrics` holds plain, JSON-serialisable numbers and strings for reports.
    """

    gate: GateName
    passed: bool
    message: str
    metrics: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def ok(cls, gate: GateName, message: str, **metrics: Any) -> "GateResult":
        return cls(gate, True, message, metrics)

    @classmethod
    def fail(cls, gate: GateName, message: str, **metrics: Any) -> "GateResult":
        return cls(gate, False, message, metrics)

    def to_dict(self) -> dict:
        return asdict(self)
