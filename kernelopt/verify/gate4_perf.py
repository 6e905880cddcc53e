"""Gate 4, performance: t_baseline / t_candidate ≥ γ on interleaved A/B rounds (docs/architecture.md, Gate 4).

Each round is one `do_bench` median per side, from the timing harness (same
`call` harness, fresh subprocess, L2 flushed). The speedup uses the medians of
the rounds, which one slow round cannot move. The noise reported with it is the
robust spread (1.4826 · MAD / median) of the per-round speedups — the rounds are
interleaved, so round i of each side ran under the same conditions — which one
slow round cannot inflate either; it decides whether a result "matched".
"""
from __future__ import annotations

import math
import statistics
from typing import Sequence

from kernelopt.core.timing import robust_spread_pct
from kernelopt.verify.result import GateName, GateResult

GATE: GateName = "gate4"
# Above this noise the rounds are too few to tell: Gate 4 times MORE_ROUNDS more in a fresh child and
# decides on all of them (5 rounds' MAD is a coarse figure: on the H200 two A/A runs of one 0.5 ms problem
# gave 3.12% and 0.67%, 25 rounds 1.11%: benchmarks/results/2026-12-02-h200-suite-strict-part2).
RETIME_NOISE_PCT = 2.0
MORE_ROUNDS = 10


def needs_more_rounds(result: GateResult) -> bool:
    """Whether a Gate 4 verdict rests on rounds too noisy to tell (and none were added yet)."""
    return (result.metrics.get("noise_pct") or 0.0) > RETIME_NOISE_PCT and result.metrics.get("rounds", 0) <= 5


def speedup_noise_pct(baseline_ms_rounds: Sequence[float], candidate_ms_rounds: Sequence[float]) -> float:
    """The robust spread of the per-round speedups (paired rounds); of each side where unpaired."""
    if len(baseline_ms_rounds) == len(candidate_ms_rounds):
        return robust_spread_pct([b / c for b, c in zip(baseline_ms_rounds, candidate_ms_rounds, strict=True)])
    return max(robust_spread_pct(baseline_ms_rounds), robust_spread_pct(candidate_ms_rounds))


def check_performance(baseline_ms_rounds: Sequence[float], candidate_ms_rounds: Sequence[float],
                      gamma: float = 1.03, noise_floor_pct: float = 0.0) -> GateResult:
    """Pass iff median(baseline) / median(candidate) ≥ gamma (3% faster, not "at most 3% slower").

    metrics: speedup, both medians, noise_pct (the robust spread of the
    per-round speedups, at least `noise_floor_pct`) and within_noise (|speedup − 1| ≤ noise): a
    correct candidate within the noise is "matched", and the baseline is kept.
    """
    for side, rounds in (("baseline", baseline_ms_rounds), ("candidate", candidate_ms_rounds)):
        if not rounds:
            return GateResult.fail(GATE, f"no {side} timings", gamma=gamma)
        if any(not math.isfinite(t) or t <= 0 for t in rounds):
            return GateResult.fail(GATE, f"invalid {side} timings {list(rounds)} (each must be a positive time)",
                                   gamma=gamma)
    base = statistics.median(baseline_ms_rounds)
    cand = statistics.median(candidate_ms_rounds)
    speedup = base / cand
    noise = max(speedup_noise_pct(baseline_ms_rounds, candidate_ms_rounds), noise_floor_pct)
    within = abs(speedup - 1.0) <= noise / 100.0
    m = {"speedup": speedup, "baseline_ms": base, "candidate_ms": cand, "noise_pct": noise,
         "within_noise": within, "gamma": gamma, "rounds": len(baseline_ms_rounds)}
    figure = (f"speedup {speedup:.3f}x (baseline {base:.4g} ms, candidate {cand:.4g} ms, "
              f"noise ±{noise:.2f}% over {len(baseline_ms_rounds)} rounds)")
    if speedup >= gamma:
        return GateResult.ok(GATE, f"{figure} ≥ γ {gamma:g}", **m)
    why = "within the measurement noise" if within else ("slower than the baseline" if speedup < 1 else "too small a gain")
    return GateResult.fail(GATE, f"{figure} < γ {gamma:g}: {why}", **m)


#: the share of the gain a side's reported times imply on the wall clock that the parent's own clock must see
CLOCK_SHARE = 0.5
#: the most the rounds' spread may excuse of the clock's shortfall (a 5x claim needs 3x seen: far past it)
MAX_CLOCK_ALLOWANCE = 0.25


def check_clock(baseline_ms_rounds: Sequence[float], candidate_ms_rounds: Sequence[float],
                baseline_wall_rounds: Sequence[float], candidate_wall_rounds: Sequence[float]) -> GateResult:
    """Whether the times each side's process reported agree with the job's own clock.

    `*_wall_rounds`: per round, the parent's wall time of that round divided by its iterations (each with its
    L2 flush and launches). The baseline's process ran no candidate code: its wall time over its reported
    time is the harness's own overhead per iteration, o. The candidate's reported times then imply a
    wall-clock speedup (b + o) / (c + o); the parent's clock must see at least CLOCK_SHARE of that gain, less
    what the rounds' own spread explains (the largest robust spread of the four series, twice, and never more
    than MAX_CLOCK_ALLOWANCE: on a loaded machine one side's rounds stretch, and an honest candidate 1 ms slower
    once read 1.24x faster by its times while the clock saw 1.12x). Each series is read by its fastest round:
    other work on the machine only ever adds time to a round, and on 2 loaded cores the medians once had the
    baseline's process 3.6x slower than the candidate's on the wall, so that a candidate 1 ms slower and
    reporting 1 us a call passed. A forged 5x or more is far past the allowance.
    A candidate that patched the timers its harness held, or answered for them, reports times its
    wall clock contradicts; one that is faster on the GPU only while the L2 flush hides its launches is
    caught too (the deployed model would not be faster).
    """
    b, c = min(baseline_ms_rounds), min(candidate_ms_rounds)
    bw, cw = min(baseline_wall_rounds), min(candidate_wall_rounds)
    overhead = max(bw - b, 0.0)
    implied = (b + overhead) / (c + overhead) if c + overhead > 0 else math.inf
    observed = bw / cw if cw > 0 else math.inf
    need = 1.0 + (implied - 1.0) * CLOCK_SHARE
    spread = max(robust_spread_pct(r) for r in (baseline_ms_rounds, candidate_ms_rounds, baseline_wall_rounds,
                                                candidate_wall_rounds)) / 100.0
    allowance = min(2.0 * spread, MAX_CLOCK_ALLOWANCE)
    m = {"implied_wall_speedup": implied, "observed_wall_speedup": observed, "overhead_ms": overhead,
         "baseline_wall_ms": bw, "candidate_wall_ms": cw, "clock_spread": spread}
    if implied <= 1.0 or observed * (1.0 + allowance) >= need:
        return GateResult.ok(GATE, f"the job's clock agrees: {observed:.3f}x on the wall clock where the reported "
                             f"times imply {implied:.3f}x", **m)
    return GateResult.fail(GATE, f"the candidate's reported times disagree with the job's own clock: they imply "
                           f"{implied:.3f}x on the wall clock (overhead {overhead:.3g} ms per call), the job "
                           f"measured {observed:.3f}x (at least {need:.3f}x needed, {allowance:.1%} of spread allowed for)", **m)
