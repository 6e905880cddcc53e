"""How a job's time budget splits between its search and its verification (model and kernel jobs alike).

The search stops while `verify_reserve_s` is left, so Gates 3-4 run on its best candidate within the budget;
the reserve is never more than half the budget, so a short budget still searches.
"""
from __future__ import annotations


def verify_cost_s(load_s: float) -> float:
    """One evaluation's expected cost (Gate 3's three children and Gate 4's two timing sessions each build the
    model, as the load stage did once): 30 s + 5 x the job's own load stage. Over the H200 suite runs with a
    verify stage (112 rows of benchmarks/results/2026-12-0*/bench.json) the load stage took 3.6-6.3 s and the
    verify stage 25-62 s; a network that takes longer to build and run takes longer to verify."""
    return 30.0 + 5.0 * max(0.0, load_s)


def verify_reserve_s(time_budget_s: float, load_s: float = 0.0) -> float:
    """Time kept back from the search for re-stitching and Gates 3-4: 30% of the budget, at least 45 s and one
    evaluation's expected cost (`verify_cost_s`), at most 120 s unless that cost is more, and never more than
    half of the budget. Level3/01 under a 120 s budget had 36 s kept back and its Gate 4 timing ran out of
    time (benchmarks/results/2026-12-02-h200-suite-strict-part2)."""
    cost = verify_cost_s(load_s)
    return min(max(120.0, cost), max(45.0, 0.3 * time_budget_s, cost), 0.5 * time_budget_s)


def search_stopped_before_a_candidate(time_budget_s: float, load_s: float, reserve_s: float) -> str:
    """The `timeout` cause of a job whose budget ended its search before the first candidate."""
    return (f"the job's time budget ({time_budget_s:.0f} s) stopped the search before its first candidate: loading "
            f"took {load_s:.1f} s and {reserve_s:.0f} s are kept for Gates 3-4; a longer --time-limit lets it search")
