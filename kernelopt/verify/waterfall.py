"""The ranked waterfall (docs/architecture.md, Ranked waterfall), as pure logic.

Every kernel has candidates ranked best-first, all past Gates 1–2; `evaluate`
runs Gates 3–4 on one combination (kernel → candidate id). Sub-kernel gates
can pass while the re-stitched model fails (errors add up across kernels, or a
faster kernel makes its neighbours slower), so:
  1. try the fastest combination: every kernel's best candidate;
  2. drop kernels one at a time to isolate a culprit: a kernel without which
     the rest passes (trying the lowest-priority kernels first); when no single
     kernel is to blame, drop one and repeat;
  3. add the dropped kernels back, each with its next-best candidates, keeping
     every addition that passes;
  4. with nothing passing, fall back to {} (the compiler baseline).
The number of evaluations is bounded; every one is recorded for the report.

Targets may overlap: a library group holds the Triton kernels of its epilogue,
which are targets of their own. A combination is always disjoint (`conflicts`:
target → the targets it overlaps): the fastest combination takes targets in
priority order and leaves out one that overlaps a target already in, and the
add-back phase tries a left-out target only where it overlaps nothing kept.
Without the rule a kernel inside a chosen group would be listed as replaced
while the group's module runs in its place.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable, Collection, Mapping, Optional

Combination = dict[str, str]
Evaluate = Callable[[Combination], tuple]  # → (passed, speedup) ; speedup may be None


@dataclass
class WaterfallStep:
    combination: Combination
    passed: bool
    speedup: Optional[float]
    note: str  # why this combination was tried (and an evaluation error, if any)


@dataclass
class WaterfallResult:
    combination: Combination  # the one to deploy; {} means the compiler baseline
    passed: bool  # a non-empty combination passed Gates 3–4
    speedup: Optional[float]
    reason: str
    trace: list[WaterfallStep] = field(default_factory=list)

    @property
    def evaluations(self) -> int:
        return len(self.trace)

    def to_dict(self) -> dict:
        return {**asdict(self), "evaluations": self.evaluations}


class _Runner:
    """Memoised, budgeted calls of `evaluate`."""

    def __init__(self, evaluate: Evaluate, max_evaluations: int, should_stop: Callable[[], bool] | None = None):
        self.evaluate, self.budget, self.should_stop = evaluate, max_evaluations, should_stop
        self.trace: list[WaterfallStep] = []
        self.memo: dict[frozenset, WaterfallStep] = {}

    def __call__(self, combo: Combination, note: str) -> Optional[bool]:
        """True/False: the verdict; None: out of budget. {} is the baseline and passes unevaluated."""
        if not combo:
            return True
        key = frozenset(combo.items())
        if key in self.memo:
            return self.memo[key].passed
        if len(self.trace) >= self.budget or (self.should_stop is not None and self.should_stop()):
            return None
        try:
            out = self.evaluate(dict(combo))
            passed, speedup = bool(out[0]), (float(out[1]) if out[1] is not None else None)
        except Exception as exc:  # a broken evaluation is a failed one, and the report shows why
            passed, speedup, note = False, None, f"{note}; evaluation raised {type(exc).__name__}: {exc}"
        step = WaterfallStep(dict(combo), passed, speedup, note)
        self.trace.append(step)
        self.memo[key] = step
        return passed

    def best(self) -> Optional[WaterfallStep]:
        passing = [s for s in self.trace if s.passed and s.combination]
        return max(passing, key=lambda s: (s.speedup if s.speedup is not None else float("-inf"),
                                           len(s.combination)), default=None)


def _without(combo: Combination, kernel: str) -> Combination:
    return {k: c for k, c in combo.items() if k != kernel}


def overlaps(target: str, combo: Combination, conflicts: Mapping[str, Collection[str]]) -> list[str]:
    """The targets of `combo` that `target` overlaps (either side may declare the overlap)."""
    return [k for k in combo if k != target and (k in conflicts.get(target, ()) or target in conflicts.get(k, ()))]


def select_combination(ranked: dict[str, list[str]], evaluate: Evaluate, max_evaluations: int = 12,
                       conflicts: Mapping[str, Collection[str]] | None = None,
                       should_stop: Callable[[], bool] | None = None) -> WaterfallResult:
    """`ranked`: target → candidate ids best-first, in priority order (largest expected gain first);
    `conflicts`: target → the targets it overlaps, never in one combination with it;
    `should_stop`: asked before each evaluation (the job's time budget is spent, say); true ends the
    waterfall as an exhausted evaluation budget does, with what passed so far."""
    conflicts = conflicts or {}
    order = [k for k, cands in ranked.items() if cands]  # the caller's priority order
    run = _Runner(evaluate, max_evaluations, should_stop)
    combo: Combination = {}
    dropped: list[str] = []
    for k in order:
        if overlaps(k, combo, conflicts):
            dropped.append(k)  # tried in phase 3 if what it overlaps is dropped
        else:
            combo[k] = ranked[k][0]
    if not combo:
        return WaterfallResult({}, False, None, "no candidates passed Gates 1–2: the compiler baseline is kept")

    left_out = f" (overlapping targets left out: {', '.join(dropped)})" if dropped else ""
    verdict = run(combo, f"fastest combination: every target's best candidate{left_out}")
    # Phase 2: shrink to a passing combination, one kernel at a time.
    while verdict is False:
        culprit, tried = None, []
        for k in reversed(order):  # least valuable first: the first passing rest keeps the most gain
            if k not in combo:
                continue
            rest = _without(combo, k)
            v = run(rest, f"isolate: without {k}")
            if v is None:
                break
            tried.append(k)
            if v:
                culprit = k
                break
        if culprit is None and len(tried) < len(combo):
            break  # out of budget mid-isolation
        # No single kernel to blame: drop the one whose absence kept the most speed (or the last).
        drop = culprit or max(tried, key=lambda k: (_speed(run, _without(combo, k)), order.index(k)))
        dropped.append(drop)
        combo = _without(combo, drop)
        verdict = run(combo, f"drop {drop}")
    # Phase 3: add dropped kernels back (priority order), each with its candidates best-first.
    if verdict:
        for k in sorted(dropped, key=order.index):
            if overlaps(k, combo, conflicts):
                continue
            for cand in ranked[k]:
                trial = {**combo, k: cand}
                v = run(trial, f"add back {k} with candidate {cand}")
                if v is None:
                    break
                if v:
                    combo = trial
                    break

    best = run.best()
    if best is None:
        return WaterfallResult({}, False, None,
                               f"no combination passed Gates 3–4 in {len(run.trace)} evaluations: "
                               "the compiler baseline is kept", run.trace)
    kept = ", ".join(f"{k}={c}" for k, c in best.combination.items())
    left = [k for k in order if k not in best.combination]
    note = f"; without {', '.join(left)}" if left else ""
    return WaterfallResult(dict(best.combination), True, best.speedup,
                           f"passed Gates 3–4 with {kept}{note}", run.trace)


def _speed(run: _Runner, combo: Combination) -> float:
    step = run.memo.get(frozenset(combo.items()))
    return step.speedup if step is not None and step.speedup is not None else float("-inf")
