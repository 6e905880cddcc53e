"""benchmarks/helion_suite.py's reuse of an earlier call's parts (issue 38): a full Helion autotune takes a device call
of its own, and a later call times it side by side with the default and the job's config."""
from __future__ import annotations

from benchmarks.helion_suite import _markdown, autotune_budget, cut_by_budget, reusable

H100 = "NVIDIA H100 80GB HBM3"
TUNED = {"finished": True, "effort": "full", "wall_s": 412.0, "configs": {"matmul": {"block_sizes": [64, 64, 32]}}}
JOB = {"precision": "tf32", "wall_s": 95.0, "outcome": "optimized", "cause": None, "speedup": 1.04,
       "configs": {"matmul": {"block_sizes": [128, 64, 32]}}}
EARLIER = [
    {"file": "matmul.py", "device": H100, "job": {"outcome": "not run", "configs": None}, "autotune": TUNED},
    {"file": "softmax.py", "device": H100, "job": JOB,
     "autotune": {"finished": False, "effort": "full", "note": "Helion's full autotune did not finish in 60 s"}},
    {"file": "add.py", "device": "NVIDIA H200", "job": JOB, "autotune": TUNED},
]


def test_a_finished_part_is_reused_only_from_the_same_file_on_a_gpu_of_the_same_name():
    assert reusable(EARLIER, "matmul.py", H100, "autotune", "full") == TUNED
    assert reusable(EARLIER, "matmul.py", H100, "job", "full") is None  # that call skipped its job
    # an older row listed a kept submission's best candidate as its configs: reused as what it was
    old_fallback = {**JOB, "outcome": "fallback"}
    got = reusable([{**EARLIER[1], "job": old_fallback}], "softmax.py", H100, "job", "full")
    assert got is not None and got["configs"] is None and got["best_configs"] == JOB["configs"]
    assert reusable(EARLIER, "softmax.py", H100, "job", "full") == JOB
    assert reusable(EARLIER, "softmax.py", H100, "autotune", "full") is None  # it did not finish
    assert reusable(EARLIER, "add.py", H100, "job", "full") is None  # measured on another GPU
    assert reusable(EARLIER, "matmul.py", H100, "autotune", "quick") is None  # another effort
    assert reusable([], "matmul.py", H100, "autotune", "full") is None


def test_the_table_says_which_parts_came_from_an_earlier_call_and_what_was_not_timed():
    rows = [{"file": "matmul.py", "device": H100, "job": {**JOB, "reused_from": "A/helion_suite.json"},
             "autotune": {**TUNED, "reused_from": "A/helion_suite.json"},
             "ms": {"default": 0.5, "job": 0.45, "autotune": 0.44}, "vs_default": {"job": 1.111, "autotune": 1.136}},
            {"file": "add.py", "device": H100,
             "job": {"precision": "-", "wall_s": 0.0, "outcome": "not run", "configs": None, "cause": "--skip-job"},
             "autotune": {"finished": True, "effort": "full", "wall_s": 300.0, "configs": {}},
             "ms": {"default": 0.1, "autotune": 0.09}, "vs_default": {"autotune": 1.111}}]
    lines = _markdown(rows).splitlines()
    assert "optimized, 95 s (an earlier call's)" in lines[2]
    assert "full: 412 s (an earlier call's: A/helion_suite.json)" in lines[2]
    assert "| 0.1 / - / 0.09 |" in lines[3] and "| -x | 1.111x |" in lines[3], lines[3]


def test_a_job_that_kept_the_submission_is_shown_at_the_default_and_its_best_candidate_apart():
    # 2026-12-07, an H100: attention's job fell back (its best config ran 0.843x of the default) and the table
    # showed that candidate as the job's; the job had handed back the submission
    rows = [{"file": "attention.py", "device": H100,
             "job": {**JOB, "outcome": "fallback", "configs": None, "best_configs": {"attention": {}}},
             "autotune": {"finished": False, "effort": "quick", "note": "not run (--skip-autotune)"},
             "ms": {"default": 0.0847, "best candidate": 0.1005}, "vs_default": {"best candidate": 0.843}}]
    line = _markdown(rows).splitlines()[2]
    assert "| 0.0847 / = default / - |" in line and "| 1.0x (kept; best candidate 0.1005 ms, 0.843x) |" in line, line


def test_helions_own_budget_gives_its_search_the_jobs_wall_time_and_the_table_says_where_it_was_cut():
    assert autotune_budget(None, JOB) is None and autotune_budget("240", JOB) == 240.0
    assert autotune_budget("job", JOB) == 95.0  # the job's time to result
    assert autotune_budget("job", {"outcome": "not run", "wall_s": 0.0}) is None
    # helion/autotuner/base_search.py's line when the budget ends the search
    assert cut_by_budget("[12s] Autotune budget 95s exceeded (elapsed 96.3s); returning best-so-far.\n")
    assert not cut_by_budget("[12s] Autotune budget: 95s\n[80s] Autotuning complete")
    budgeted = {**TUNED, "budget_s": 95.0, "cut_by_budget": True, "wall_s": 101.0}
    assert reusable([{**EARLIER[0], "autotune": budgeted}], "matmul.py", H100, "autotune", "full", 95.0) == budgeted
    assert reusable([{**EARLIER[0], "autotune": budgeted}], "matmul.py", H100, "autotune", "full") is None
    rows = [{"file": "matmul.py", "device": H100, "job": JOB, "autotune": budgeted,
             "ms": {"default": 0.5, "job": 0.45, "autotune": 0.47}, "vs_default": {"job": 1.111, "autotune": 1.064}},
            {"file": "add.py", "device": H100, "job": JOB,
             "autotune": {**TUNED, "budget_s": 95.0, "cut_by_budget": False, "wall_s": 40.0},
             "ms": {"default": 0.1}, "vs_default": {}}]
    lines = _markdown(rows).splitlines()
    assert "| full: 101 s, cut by its 95 s budget (best so far) |" in lines[2], lines[2]
    assert "| full: 40 s, within its 95 s budget |" in lines[3], lines[3]
