"""The ranked waterfall: fastest combination first, then isolate, substitute, drop, fall back."""
from __future__ import annotations

from kernelopt.verify.waterfall import select_combination


def evaluator(bad: set[tuple[str, str]], speed: dict[tuple[str, str], float], bad_pairs=()):
    """passed unless the combination uses a bad candidate (or a bad pair); speedup = product of gains."""
    calls = []

    def evaluate(combo):
        calls.append(dict(combo))
        items = set(combo.items())
        ok = not (items & bad) and not any(set(p) <= items for p in bad_pairs)
        gain = 1.0
        for item in items:
            gain *= speed.get(item, 1.1)
        return ok, gain

    return evaluate, calls


def test_the_fastest_combination_is_taken_when_it_passes():
    ev, calls = evaluator(set(), {})
    r = select_combination({"k0": ["a", "b"], "k1": ["c"]}, ev)
    assert r.passed and r.combination == {"k0": "a", "k1": "c"} and len(calls) == 1
    assert r.trace[0].note.startswith("fastest combination")


def test_a_culprit_is_isolated_and_its_next_candidate_tried():
    ev, calls = evaluator({("k1", "c1")}, {})
    r = select_combination({"k0": ["a1", "a2"], "k1": ["c1", "c2"], "k2": ["e1"]}, ev)
    assert r.passed and r.combination == {"k0": "a1", "k1": "c2", "k2": "e1"}
    notes = [s.note for s in r.trace]
    assert notes[0].startswith("fastest") and "without k2" in notes[1] and "without k1" in notes[2]
    assert "add back k1 with candidate c2" in notes[-1]
    assert [s.passed for s in r.trace] == [False, False, True, True]


def test_a_kernel_with_no_good_candidate_is_dropped():
    ev, _ = evaluator({("k1", "c1"), ("k1", "c2")}, {})
    r = select_combination({"k0": ["a1"], "k1": ["c1", "c2"]}, ev)
    assert r.passed and r.combination == {"k0": "a1"} and "without k1" in r.reason


def test_two_culprits_are_dropped_one_at_a_time_then_added_back_with_next_candidates():
    ev, _ = evaluator({("k0", "a1"), ("k1", "c1")}, {})
    r = select_combination({"k0": ["a1", "a2"], "k1": ["c1", "c2"]}, ev)
    assert r.passed and r.combination == {"k0": "a2", "k1": "c2"}
    assert r.evaluations <= 12


def test_an_interaction_failure_keeps_the_faster_half():
    """Each kernel passes alone, the pair does not (errors add up): keep the bigger gain."""
    ev, _ = evaluator(set(), {("k0", "a"): 1.3, ("k1", "c"): 1.1}, bad_pairs=[(("k0", "a"), ("k1", "c"))])
    r = select_combination({"k0": ["a"], "k1": ["c"]}, ev)
    assert r.passed and r.combination == {"k0": "a"} and abs(r.speedup - 1.3) < 1e-9


def test_nothing_passing_falls_back_to_the_baseline():
    ev, _ = evaluator({("k0", "a1"), ("k0", "a2"), ("k1", "c1")}, {})
    r = select_combination({"k0": ["a1", "a2"], "k1": ["c1"]}, ev)
    assert not r.passed and r.combination == {} and "compiler baseline" in r.reason
    assert r.evaluations >= 3


def test_the_number_of_evaluations_is_bounded_and_recorded():
    ranked = {f"k{i}": [f"c{i}_{j}" for j in range(5)] for i in range(8)}
    ev, calls = evaluator({(k, c) for k, cs in ranked.items() for c in cs}, {})  # everything fails
    r = select_combination(ranked, ev, max_evaluations=5)
    assert len(calls) == r.evaluations == 5 and not r.passed and r.combination == {}
    assert len({tuple(sorted(c.items())) for c in calls}) == 5  # never the same combination twice


def test_an_evaluation_error_counts_as_a_failure_and_is_shown():
    def evaluate(combo):
        if combo.get("k0") == "a1":
            raise RuntimeError("child crashed")
        return True, 1.2

    r = select_combination({"k0": ["a1", "a2"]}, evaluate)
    assert r.combination == {"k0": "a2"} and "child crashed" in r.trace[0].note
    assert r.to_dict()["evaluations"] == 2


def test_no_candidates_means_the_baseline_without_evaluating():
    ev, calls = evaluator(set(), {})
    r = select_combination({"k0": [], "k1": []}, ev)
    assert r.combination == {} and not r.passed and calls == []


def test_overlapping_targets_are_never_in_one_combination():
    # A library group holds the kernel of its epilogue, which is a target of its own.
    ev, calls = evaluator(set(), {("group", "g1"): 1.5, ("k_epi", "e1"): 1.2})
    r = select_combination({"group": ["g1"], "k_epi": ["e1"], "k_other": ["o1"]}, ev,
                           conflicts={"group": ["k_epi"]})
    assert r.passed and r.combination == {"group": "g1", "k_other": "o1"}
    assert all(not {"group", "k_epi"} <= set(c) for c in calls), calls
    assert "overlapping targets left out: k_epi" in r.trace[0].note


def test_a_left_out_target_is_tried_once_what_it_overlaps_is_dropped():
    # the group's only candidate fails Gate 3: the epilogue kernel's own candidate gets its turn
    ev, calls = evaluator({("group", "g1")}, {})
    r = select_combination({"group": ["g1"], "k_epi": ["e1"]}, ev, conflicts={"k_epi": ["group"]})
    assert r.passed and r.combination == {"k_epi": "e1"}
    assert calls == [{"group": "g1"}, {"k_epi": "e1"}]
    assert all(not {"group", "k_epi"} <= set(c) for c in calls)
