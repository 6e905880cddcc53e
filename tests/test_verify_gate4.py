"""Gate 4: speedup from the medians of interleaved rounds, γ, and the noise."""
from __future__ import annotations

import pytest

from kernelopt.verify.gate4_perf import check_performance


def test_a_clear_speedup_passes_with_its_noise():
    r = check_performance([10.0, 10.2, 9.9], [8.0, 8.1, 7.9], gamma=1.03)
    assert r.passed and r.gate == "gate4"
    assert r.metrics["speedup"] == pytest.approx(10.0 / 8.0)
    assert r.metrics["baseline_ms"] == 10.0 and r.metrics["candidate_ms"] == 8.0
    ratios = sorted([10.0 / 8.0, 10.2 / 8.1, 9.9 / 7.9])
    mad = sorted(abs(x - ratios[1]) for x in ratios)[1]
    assert r.metrics["noise_pct"] == pytest.approx(100 * 1.4826 * mad / ratios[1])  # of the per-round speedups
    assert not r.metrics["within_noise"] and "1.250x" in r.message


def test_below_gamma_fails_and_says_whether_it_is_noise():
    r = check_performance([1.00, 1.03, 0.98], [1.0, 0.99, 1.01])
    assert not r.passed and r.metrics["within_noise"] and "within the measurement noise" in r.message
    steady = check_performance([1.00, 1.01, 1.00], [0.995, 1.0, 0.99])  # a real 0.5% gain, measured tightly
    assert not steady.passed and not steady.metrics["within_noise"] and "too small a gain" in steady.message
    slow = check_performance([1.0, 1.0, 1.0], [1.2, 1.2, 1.2])
    assert not slow.passed and slow.metrics["speedup"] < 1 and not slow.metrics["within_noise"]
    assert "slower than the baseline" in slow.message


def test_gamma_is_a_required_gain_not_a_tolerance():
    assert not check_performance([1.02], [1.0], gamma=1.03).passed  # 2% faster is not enough
    assert check_performance([1.03], [1.0], gamma=1.03).passed


def test_one_outlier_round_does_not_move_the_median():
    r = check_performance([1.0, 1.0, 5.0], [0.9, 0.9, 0.9])
    assert r.metrics["speedup"] == pytest.approx(1.0 / 0.9)


def test_a_noise_floor_widens_the_matched_band():
    r = check_performance([1.0, 1.0], [0.99, 0.99], noise_floor_pct=2.0)
    assert r.metrics["noise_pct"] == 2.0 and r.metrics["within_noise"]


def test_bad_timings_fail_instead_of_raising():
    assert not check_performance([], [1.0]).passed
    assert "positive" in check_performance([1.0], [0.0]).message
    assert not check_performance([float("nan")], [1.0]).passed


def test_one_slow_round_does_not_inflate_the_noise():
    """A 3-D max-pool once reported 35.81% noise from one slow round; repeat runs vary by < 1.5%."""
    r = check_performance([1.0, 1.001, 0.999, 1.0, 1.5], [0.95, 0.951, 0.949, 0.95, 0.95])
    assert r.metrics["noise_pct"] < 0.5 and r.passed
    from kernelopt.core.timing import Timing

    t = Timing({"baseline": [2.0, 2.01, 1.99, 2.0, 3.0]}, "do_bench")
    assert t.noise_pct["baseline"] < 1.0


def test_a_noisy_verdict_from_five_rounds_is_re_timed_and_decided_on_all_rounds():
    from kernelopt.core.timing import Timing, merge_timings
    from kernelopt.verify.gate4_perf import MORE_ROUNDS, RETIME_NOISE_PCT, needs_more_rounds

    noisy_b, noisy_c = [1.0, 1.0, 1.0, 1.0, 1.0], [1.0, 0.94, 1.06, 0.95, 1.05]  # ratios scatter by ~5%
    first = check_performance(noisy_b, noisy_c)
    assert first.metrics["noise_pct"] > RETIME_NOISE_PCT and needs_more_rounds(first)
    assert not needs_more_rounds(check_performance([1.0] * 5, [0.8] * 5))  # a tight verdict stands
    more = Timing({"baseline": [1.0] * MORE_ROUNDS, "candidate": [1.0, 1.01] * (MORE_ROUNDS // 2)}, "do_bench")
    merged = merge_timings(Timing({"baseline": noisy_b, "candidate": noisy_c}, "do_bench"), more)
    assert merged.rounds["candidate"][:5] == noisy_c and len(merged.rounds["baseline"]) == 5 + MORE_ROUNDS
    again = check_performance(merged.rounds["baseline"], merged.rounds["candidate"])
    assert again.metrics["rounds"] == 15 and again.metrics["noise_pct"] < first.metrics["noise_pct"]
    assert not needs_more_rounds(again)  # re-timed once, never again
    with pytest.raises(ValueError):
        merge_timings(merged, Timing({"baseline": [1.0]}, "do_bench"))
