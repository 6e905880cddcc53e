"""The one timing harness: interleaved A/B rounds of `do_bench` medians.

Every speed figure KernelOPT reports (Gate 4, kernel ranking, bench reports)
comes from `bench_interleaved`. Variants are timed round-robin, the order
rotating each round so that no variant always runs first after another; each
round's figure is a `triton.testing.do_bench` median (L2 flushed before every
call), and the robust spread of the rounds (`robust_spread_pct`) is reported as noise.

On a machine without CUDA there is no meaningful time: the harness falls back
to wall-clock medians and labels them `method="cpu-wallclock"`, which the
pipeline never uses to claim a speedup.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Literal, Sequence

WARMUP_MS = 25.0
REP_MS = 100.0

#: How a time was taken: CUDA events around L2-flushed calls as `triton.testing.do_bench` takes them (in this
#: process, or in the apart harness's children), or wall-clock medians on a machine without CUDA (never a speedup).
TimingMethod = Literal["do_bench", "cpu-wallclock"]


# 1.4826 · MAD estimates a standard deviation for normal data; unlike (max − min) one
# slow round (a clock dip, another process) does not move it.
MAD_TO_SIGMA = 1.4826


def robust_spread_pct(values: Sequence[float]) -> float:
    """1.4826 · median absolute deviation / median, in percent (0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    med = statistics.median(values)
    if med <= 0:
        return 0.0
    mad = statistics.median(abs(v - med) for v in values)
    return 100.0 * MAD_TO_SIGMA * mad / med


@dataclass
class Timing:
    rounds: dict[str, list[float]]  # variant -> per-round median ms
    method: TimingMethod
    warmup_ms: float = WARMUP_MS
    rep_ms: float = REP_MS
    median_ms: dict[str, float] = field(default_factory=dict)
    noise_pct: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, values in self.rounds.items():
            med = statistics.median(values)
            self.median_ms[name] = med
            self.noise_pct[name] = robust_spread_pct(values)

    def speedup(self, baseline: str, candidate: str) -> float:
        return self.median_ms[baseline] / self.median_ms[candidate]


def merge_timings(first: Timing, more: Timing) -> Timing:
    """One Timing of both runs' rounds, in order (same variants and method): round i of each side stays
    paired with round i of the others."""
    if set(first.rounds) != set(more.rounds) or first.method != more.method:
        raise ValueError(f"cannot merge timings of {sorted(first.rounds)} ({first.method}) and "
                         f"{sorted(more.rounds)} ({more.method})")
    return Timing({k: first.rounds[k] + more.rounds[k] for k in first.rounds}, first.method,
                  first.warmup_ms, first.rep_ms)


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def bench_interleaved(fns: dict[str, Callable[[], object]], rounds: int = 5,
                      warmup_ms: float = WARMUP_MS, rep_ms: float = REP_MS) -> Timing:
    """Time each callable `rounds` times, interleaved; one do_bench median per round."""
    names = list(fns)
    results: dict[str, list[float]] = {n: [] for n in names}
    if _cuda():
        import torch
        from triton.testing import do_bench

        for fn in fns.values():  # compile, autotune-free warm start before any round
            fn()
        torch.cuda.synchronize()
        for r in range(rounds):
            k = r % len(names)
            for name in names[k:] + names[:k]:
                results[name].append(float(do_bench(fns[name], warmup=warmup_ms, rep=rep_ms,
                                                    return_mode="median")))
        return Timing(results, "do_bench", warmup_ms, rep_ms)
    for r in range(rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            samples = []
            for _ in range(3):
                t0 = time.perf_counter()
                fns[name]()
                samples.append((time.perf_counter() - t0) * 1e3)
            results[name].append(statistics.median(samples))
    return Timing(results, "cpu-wallclock", 0.0, 0.0)
