"""The summarizer and the job's experience memory (docs/agents.md).

The summarizer is deterministic: an attempt already carries everything an item
needs (the plan and its strategy label, the gate that ended it with its feedback,
the kernel times), so one item per attempt is made by rule, not by an LLM call —
no tokens spent, and the same attempt always gives the same item. The design asks for
the structure (what changed, metrics before/after, outcome, lesson), not for a
model to write it.

- Every item goes to the job's `experience.jsonl` artifact.
- The memory queue keeps the last Q items per target that are worth telling the
  planner: successes (speedup >= s+), slowdowns (slower by s- or more) and
  failures at a gate; neutral results, duplicates and replies without code are not.
- Strategy outcomes: per plan (a plan and its executor retries are one attempt of
  its strategy), success when one of its candidates reached s+. The job's report
  carries them; the service turns them into the team's AVOID list
  (service/strategy_memory.py).
"""
from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal, Optional

from kernelopt.core.jobfiles import append_text
from kernelopt.search.generator import Attempt, Gate

EXPERIENCE_FILE = "experience.jsonl"
SUCCESS_AT = 1.05  # s+: a candidate this much faster than the original is stored as a success
SLOWDOWN_AT = 1.20  # s-: one this much slower is stored as a slowdown
MEMORY_SIZE = 8  # Q

Outcome = Literal["success", "slowdown", "neutral", "failed", "duplicate", "no-code"]
REMEMBERED: tuple[Outcome, ...] = ("success", "slowdown", "failed")


@dataclass
class ExperienceItem:
    target: str
    candidate: str
    parent: Optional[str]
    generator: str
    chain: int
    strategy: str  # the planner's label; "" for a built-in generator's candidate
    change: str  # what changed: the plan or the generator's description
    outcome: Outcome
    gate: str
    before_ms: Optional[float]  # the original's kernel time
    after_ms: Optional[float]  # this candidate's
    speedup: Optional[float]  # before / after
    lesson: str

    def to_dict(self) -> dict:
        return asdict(self)


def summarize(target: str, a: Attempt, success_at: float = SUCCESS_AT,
              slowdown_at: float = SLOWDOWN_AT) -> ExperienceItem:
    """One structured experience item for one attempt (the summarizer)."""
    c = a.candidate
    strategy = str((c.params or {}).get("strategy") or "")
    change = str((c.params or {}).get("plan") or c.description)[:300]
    speedup = None
    if a.passed and a.kernel_ms and a.baseline_kernel_ms:
        speedup = round(a.baseline_kernel_ms / a.kernel_ms, 4)
    label = strategy or c.generator
    why = " ".join((a.feedback or "").split())[:240]
    outcome: Outcome
    if a.gate == Gate.DUPLICATE:
        outcome, lesson = "duplicate", f"{label}: produced a program already tried; nothing new was learned"
    elif a.gate == Gate.EXTRACT:
        outcome, lesson = "no-code", f"{label}: the reply held no usable code block ({why})"
    elif not a.passed:
        outcome, lesson = "failed", f"{label}: rejected at {a.gate}: {why}"
    elif speedup is None:
        outcome, lesson = "neutral", f"{label}: correct; not timed"
    elif speedup >= success_at:
        outcome, lesson = "success", f"{label}: worked, {speedup:.2f}x faster than the original"
    elif speedup <= 1.0 / slowdown_at:
        outcome, lesson = "slowdown", f"{label}: correct but {1 / speedup:.2f}x slower than the original; avoid"
    else:
        outcome, lesson = "neutral", f"{label}: correct, {speedup:.2f}x (no clear gain)"
    return ExperienceItem(target, c.id, c.parent, c.generator, c.chain, strategy, change, outcome, str(a.gate),
                          a.baseline_kernel_ms, a.kernel_ms if a.passed else None, speedup, lesson)


class ExperienceMemory:
    """One job's memory: the experience log, the planner's queue, the strategy tally."""

    def __init__(self, path: str | Path | None = None, size: int = MEMORY_SIZE, success_at: float = SUCCESS_AT,
                 slowdown_at: float = SLOWDOWN_AT):
        self.path = Path(path) if path else None
        self.size, self.success_at, self.slowdown_at = size, success_at, slowdown_at
        self.items = 0
        self._queues: dict[str, deque[ExperienceItem]] = {}
        self._plans: dict[str, tuple[str, bool]] = {}  # plan id -> (strategy, succeeded)
        self._lock = threading.Lock()

    def add(self, target: str, a: Attempt) -> ExperienceItem:
        item = summarize(target, a, self.success_at, self.slowdown_at)
        with self._lock:
            self.items += 1
            if item.outcome in REMEMBERED:
                self._queues.setdefault(target, deque(maxlen=max(1, self.size))).append(item)
            plan_id = (a.candidate.params or {}).get("plan_id")
            if item.strategy and plan_id:
                _, won = self._plans.get(plan_id, (item.strategy, False))
                self._plans[plan_id] = (item.strategy, won or item.outcome == "success")
            if self.path is not None:
                append_text(self.path, json.dumps(item.to_dict()) + "\n")  # never through a planted link
        return item

    def recent(self, target: str) -> list[ExperienceItem]:
        with self._lock:
            return list(self._queues.get(target, ()))

    def prompt_text(self, target: str) -> str:
        """The memory as the planner reads it: one lesson per line, oldest first."""
        items = self.recent(target)
        if not items:
            return "Nothing has been tried on this kernel yet."
        return "\n".join(f"- [{i.outcome}] {i.lesson}" + (f" (plan: {i.change[:160]})" if i.strategy else "")
                         for i in items)

    def strategy_outcomes(self) -> list[dict]:
        """[{"strategy", "attempts", "successes"}] over this job's plans, by strategy."""
        tally: dict[str, list[int]] = {}
        with self._lock:
            for strategy, won in self._plans.values():
                t = tally.setdefault(strategy, [0, 0])
                t[0] += 1
                t[1] += int(won)
        return [{"strategy": s, "attempts": n, "successes": w} for s, (n, w) in sorted(tally.items())]
