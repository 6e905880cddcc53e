"""The cause a model job ends with when nothing is deployed: the true one, found on real H200 runs.

Two causes were wrong on the H200 (2026-12-02, suite level1/18 and level3/01): a small-K GEMM whose
only searched target no generator applies to ended "no-faster-candidate: 0 candidates passed"
(nothing was ever proposed), and an MLP whose job budget ran out in verification ended
"correctness-failure: every combination failed Gate 3" (no combination reached Gate 3's verdict).
"""
from __future__ import annotations

from pathlib import Path

from kernelopt.compiled.group import library_groups
from kernelopt.core.outcome import Cause, Outcome, cause_code
from kernelopt.pipeline.budget import verify_reserve_s
from kernelopt.pipeline.context import JobFallback
from kernelopt.pipeline.model_job import (
    _group_target,
    decline_reason,
    group_declines,
    kernel_wins,
    search_cause,
    unverified_outcome,
)
from kernelopt.search.generator import Attempt, Candidate, KernelTarget
from kernelopt.search.generators.launch_config import LaunchConfigGenerator
from kernelopt.search.registry import (
    available,
    default_generators,
    make_generator,
    outside_job_hint,
    searches_model_targets,
)
from kernelopt.verify.gate4_perf import check_performance
from kernelopt.verify.result import GateResult
from kernelopt.verify.waterfall import select_combination

H200 = Path(__file__).parent / "testdata" / "captured_h200"


def _declined(target: str, why: str) -> dict:
    return {"target": target, "attempts": 0, "passed": 0, "best_kernel_speedup": None, "declined": True,
            "stopped_reason": why}


def _searched(target: str, passed: int) -> dict:
    return {"target": target, "attempts": passed, "passed": passed, "best_kernel_speedup": 1.01,
            "stopped_reason": "iterations", "harness_errors": [], "generator_errors": []}


def test_a_search_where_no_generator_applies_to_any_target_is_no_candidates():
    cause = search_cause([_declined("_kernelopt_group_1", "the GEMM is a Triton template Inductor chose")], 1.03)
    assert cause_code(cause) == Cause.NO_CANDIDATES, cause
    assert "no generator of this job applies" in cause and "Triton template" in cause


def test_a_search_with_timed_candidates_none_fast_enough_says_so_and_names_what_was_declined():
    cause = search_cause([_searched("triton_poi_0", 20), _declined("_kernelopt_group_1", "a bf16 GEMM")], 1.03)
    assert cause_code(cause) == Cause.NO_FASTER_CANDIDATE, cause
    assert cause.startswith("no-faster-candidate: 20 candidates passed gates 1-2") and "a bf16 GEMM" in cause


def test_a_search_the_budget_stopped_before_any_candidate_is_a_timeout_not_zero_candidates_passed():
    # H200, tf32 suite: level1/05 under a 120 s budget reached the search with less than the time kept for
    # verification left, and ended "no-faster-candidate: 0 candidates passed gates 1-2"
    stopped = {**_searched("triton_red_fused_max_0", 0), "stopped_reason": "should_stop"}
    cause = search_cause([stopped], 1.03)
    assert cause_code(cause) == Cause.TIMEOUT, cause
    assert "before its first candidate" in cause and "triton_red_fused_max_0" in cause and "--time-limit" in cause
    # a search that did time candidates before the budget stopped it keeps its own cause
    cause = search_cause([{**_searched("triton_red_fused_max_0", 3), "stopped_reason": "should_stop"}], 1.03)
    assert cause_code(cause) == Cause.NO_FASTER_CANDIDATE and "3 candidates passed" in cause, cause


def test_a_baseline_the_gates_could_not_run_is_a_harness_error():
    s = {**_searched("triton_poi_0", 0), "attempts": 4, "harness_errors": ["could not run the reference: OOM"]}
    cause = search_cause([s], 1.03)
    assert cause_code(cause) == Cause.HARNESS_ERROR and "OOM" in cause


def test_verification_that_never_reached_a_verdict_ends_with_what_stopped_it():
    errors = [JobFallback(Cause.TIMEOUT, "Gate 4 timing timed out: time_stitched did not finish within 9 s")]
    outcome, cause, _ = unverified_outcome([], errors, evaluations=1, gamma=1.03)
    assert outcome == Outcome.FALLBACK and cause_code(cause) == Cause.TIMEOUT, cause
    assert "finished verification (1 tried)" in cause and "within 9 s" in cause
    # stopped before its first evaluation (the budget already spent): the same cause, none tried
    spent = [JobFallback(Cause.TIMEOUT, "time budget of 120 s spent before Gate 3")]
    outcome, cause, _ = unverified_outcome([], spent, evaluations=0, gamma=1.03)
    assert cause_code(cause) == Cause.TIMEOUT and "(0 tried)" in cause, cause


def test_gate3_failures_are_correctness_failures_and_the_unfinished_ones_are_counted():
    g3 = GateResult.fail("gate3", "rho 40 > rho_max 10")
    errors = [JobFallback(Cause.TIMEOUT, "time budget of 120 s spent before Gate 3")]
    outcome, cause, _ = unverified_outcome([{"gate3": g3}], errors, evaluations=2, gamma=1.03)
    assert cause_code(cause) == Cause.CORRECTNESS_FAILURE, cause
    assert "(1 of 2)" in cause and "1 more did not finish (timeout" in cause


def test_a_correct_combination_within_the_noise_is_matched_and_a_slow_one_fails_the_performance_gate():
    g3 = GateResult.ok("gate3", "allclose")
    within = check_performance([1.0, 1.01, 0.99, 1.0, 1.02], [1.0, 0.97, 1.02, 1.01, 0.99])
    slow = check_performance([1.0] * 5, [1.2] * 5)
    outcome, cause, noise = unverified_outcome([{"gate3": g3, "gate4": within}], [], evaluations=1, gamma=1.03)
    assert outcome == Outcome.MATCHED and cause_code(cause) == Cause.WITHIN_NOISE, cause
    # the match states the noise that decided it (Gate 4's), which the job's result then carries
    assert noise == within.metrics["noise_pct"] and f"({noise:.2f}%)" in cause
    outcome, cause, noise = unverified_outcome([{"gate3": g3, "gate4": slow}], [], evaluations=1, gamma=1.03)
    assert noise is None
    assert outcome == Outcome.FALLBACK and cause_code(cause) == Cause.PERFORMANCE_GATE and "0.833x" in cause


def test_the_waterfall_stops_evaluating_when_told_to_and_keeps_what_passed():
    calls: list[dict] = []
    spent = {"now": False}

    def evaluate(combo):
        calls.append(dict(combo))
        spent["now"] = True  # the first evaluation spends the budget
        return False, None

    r = select_combination({"k0": ["a"], "k1": ["b"], "k2": ["c"]}, evaluate, should_stop=lambda: spent["now"])
    assert len(calls) == 1 and r.evaluations == 1 and not r.passed and r.combination == {}


def test_launch_config_declines_a_library_group_in_words_a_user_understands():
    target = KernelTarget(name="_kernelopt_group_1", source="def run(*args):\n    pass\n", kind="group:mm",
                          arg_names=[], signature={}, numels=[], group={"name": "_kernelopt_group_1", "op": "mm"})
    why = LaunchConfigGenerator().applicable(target)
    assert why == "launch_config re-tunes single Triton kernels, not library groups"


def test_the_search_keeps_back_enough_time_for_one_verification():
    # one evaluation took 21-37 s on the H200; 30% of a 120 s budget (36 s) was too little for level3/01
    assert verify_reserve_s(120) == 45 and verify_reserve_s(900) == 120 and verify_reserve_s(300) == 90
    assert verify_reserve_s(60) == 30  # never more than half the budget
    # a model whose load stage took 4 s (the suite's models on the H200: 3.6-6.3 s) keeps back one evaluation
    assert verify_reserve_s(120, 4.0) == 50 and verify_reserve_s(900, 4.0) == 120
    # a network that took 25 s to load: one evaluation is expected to take 155 s, past the usual 120 s cap
    assert verify_reserve_s(900, 25.0) == 155 and verify_reserve_s(150, 25.0) == 75


def _timed(config: str, kernel_ms: float, baseline_ms: float) -> Attempt:
    return Attempt(Candidate("triton_per_fused_max_pool3d_with_indices_0", f"# {config}", "launch_config", config),
                   True, "timed", "passed gates 1-2", kernel_ms=kernel_ms, baseline_kernel_ms=baseline_ms)


def test_a_candidate_must_beat_its_targets_typical_baseline_not_only_one_slow_batch():
    # level1/24 on the H200: one batch's baseline ran 1.521 ms, every other batch's 1.391-1.393 ms
    lucky = _timed("XBLOCK=64 num_warps=2", 1.3947, 1.5208)
    others = [_timed(f"XBLOCK={x} num_warps=4", k, b) for x, k, b in
              ((256, 1.4185, 1.3931), (128, 1.4329, 1.3906), (32, 5.39, 1.3923))]
    ranked = sorted([lucky] + others, key=lambda a: a.kernel_ms)
    assert lucky.baseline_kernel_ms / lucky.kernel_ms > 1.09  # what its own batch said
    assert kernel_wins([lucky] + others, ranked, need=1.031) == []
    real = _timed("XBLOCK=32 num_warps=8", 1.20, 1.392)  # 1.16x against every baseline timing
    assert kernel_wins([lucky, real] + others, [real, lucky] + others, need=1.031) == [real]


def test_a_convolution_group_declined_by_the_default_generators_names_the_opt_in_one_that_applies():
    # level2/03 on the H200 (2026-12-03) ended "no-candidates: ... gemm_fp32 handles ... not convolution",
    # true but silent on conv_fp32, the registered (opt-in) generator that does handle it.
    (group,) = library_groups((H200 / "03_conv_bn_relu" / "baseline_module.py").read_text())
    target = _group_target(group, 1.0, "strict")
    names = default_generators()
    why = decline_reason(target, [make_generator(n) for n in names if searches_model_targets(n)], names)
    assert why.startswith("launch_config re-tunes single Triton kernels, not library groups; ")
    assert "gemm_fp32 handles" in why and "not convolution" in why
    assert ("not in this job but would apply: conv_fp32 (opt-in), cudnn_autotune (opt-in), llm_codegen (an agent: "
            "needs an LLM endpoint)") in why
    every = available()
    assert outside_job_hint(target, every) is None  # every generator named: nothing to point at
    # a GEMM group declined by a launch_config-only job points at the default gemm_fp32, not at conv_fp32
    (gemm,) = library_groups((H200 / "01_linear_bias_gelu" / "baseline_module.py").read_text())
    hint = outside_job_hint(_group_target(gemm, 1.0, "strict"), ["launch_config"])
    assert hint is not None and "gemm_fp32," in hint and "conv_fp32" not in hint


def _conv_bn_relu_plan(names: list[str]):
    """level2/03's H200 capture and the profile its strict run measured (2026-12-03, strict part 3)."""
    from kernelopt.compiled.decompose import decompose
    from kernelopt.compiled.group import all_groups
    from kernelopt.profiling.baseline import BaselineProfile, KernelShare
    from kernelopt.search.strategy import plan_groups, plan_targets

    source = (H200 / "03_conv_bn_relu" / "baseline_module.py").read_text()
    graph = decompose(source)
    measured = {"triton_poi_fused__native_batch_norm_legit_functional_convolution_relu_5": (0.254, 1.011),
                "triton_red_fused__native_batch_norm_legit_functional_convolution_2": (0.132, 0.979),
                "triton_poi_fused_convolution_0": (0.129, 0.994),
                "triton_red_fused__native_batch_norm_legit_functional_convolution_3": (0.014, None),
                "triton_poi_fused_convolution_1": (0.004, None),
                "triton_per_fused__native_batch_norm_legit_functional_convolution_copy__4": (0.003, None),
                "triton_poi_fused_add_copy__6": (0.002, None)}
    assert set(measured) == set(graph.kernels)
    prof = BaselineProfile(end_to_end_ms=0.5056, noise_pct=0.26, timing_method="do_bench", gpu_total_ms=0.4917,
                           kernels=[KernelShare("sm90_xmma_fprop_implicit_gemm", "library", 0.459, 0.2258)]
                           + [KernelShare(k, "triton", s, s * 0.4917, roofline_fraction=f)
                              for k, (s, f) in measured.items()],
                           library_share=0.463, triton_share=0.537)
    generators = [make_generator(n) for n in names if searches_model_targets(n)]
    declines = group_declines(generators, names, "strict", "fp32")
    kinds = {n: k.kind for n, k in graph.kernels.items()}
    return prof, plan_targets(kinds, prof, 1.03, names) + plan_groups(all_groups(source, graph), prof, 1.03,
                                                                     names, declines)


def test_a_group_no_generator_applies_to_is_no_target_and_its_kernels_are_weighed_as_kernels():
    """Issue 27: level2/03 ended `no-candidates` on the group alone, its Triton kernels (54% of GPU time)
    unmentioned in the cause. Now the group is no target, each kernel is weighed by its own share, and
    the cause is the kernels' (at the memory roofline), naming the group no generator applies to."""
    from kernelopt.search.strategy import fallback_cause

    prof, decisions = _conv_bn_relu_plan(default_generators())
    by = {d.name: d for d in decisions}
    (conv,) = [d for d in decisions if d.kind == "group:convolution"]
    assert not conv.searched and conv.skip == "declined" and conv.reason.startswith("no generator of this job applies")
    assert "would apply: conv_fp32 (opt-in), cudnn_autotune (opt-in)," in conv.reason
    assert "4 Triton kernel(s) are searched as kernels" in conv.reason
    relu = by["triton_poi_fused__native_batch_norm_legit_functional_convolution_relu_5"]
    assert relu.tier == "near-optimal" and not relu.searched  # weighed: at 101% of the measured bandwidth
    cause = fallback_cause(prof, decisions, 1.03)
    assert cause_code(cause) == "near-optimal", cause
    assert f"no generator of this job applies to 1 library group(s)/chain(s) ({conv.name}" in cause
    # conv_fp32 or cudnn_autotune named, the group is a target again
    for names in (default_generators() + ["cudnn_autotune"], default_generators() + ["conv_fp32"]):
        _, opted = _conv_bn_relu_plan(names)
        (conv,) = [d for d in opted if d.kind == "group:convolution"]
        assert conv.searched, names


def test_no_candidates_only_where_no_generator_applies_to_any_target():
    from kernelopt.search.strategy import fallback_cause

    prof, decisions = _conv_bn_relu_plan(["gemm_fp32"])  # no kernel generator: nothing is weighed by Amdahl
    assert not any(d.searched for d in decisions)
    cause = fallback_cause(prof, decisions, 1.03)
    assert cause_code(cause) == Cause.NO_CANDIDATES, cause
    assert "no generator of this job applies to any target" in cause and "gemm_fp32 handles" in cause
