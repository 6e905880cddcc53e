"""The result type and the written report: speed only where it was measured, never a `None`."""
import json

import pytest

from kernelopt.pipeline.options import NO_GPU_TIMING, JobResult, not_measured
from kernelopt.pipeline.report import render_markdown


def test_a_result_without_a_speedup_is_not_measured():
    assert JobResult("optimized", "speedup 1.2x", speedup=1.2, baseline_ms=2.0).timing == "measured"
    failed = JobResult("failed", "does not import")
    assert failed.timing == "not-measured" and not failed.measured
    r = JobResult("fallback", "no-gpu: ...", speedup=1.0, baseline_ms=88.1, optimized_ms=88.1, noise_pct=75.0)
    r.not_measured(NO_GPU_TIMING)
    assert (r.speedup, r.baseline_ms, r.optimized_ms, r.noise_pct) == (None, None, None, None)
    assert r.to_dict()["timing"] == "not-measured" and r.to_dict()["timing_note"] == NO_GPU_TIMING
    # Declared not measured, a result carries no times whatever it was given.
    r = JobResult("fallback", "crash: x", speedup=1.0, baseline_ms=3.0, timing="not-measured", timing_note="why")
    assert r.speedup is None and r.baseline_ms is None and r.timing_note == "why"
    with pytest.raises(ValueError):
        JobResult("fallback", "crash: x", timing="estimated")
    d = not_measured({"outcome": "fallback", "cause": "timeout", "speedup": 1.0, "baseline_ms": 2.0}, "why")
    assert d["speedup"] is None and d["baseline_ms"] is None and d["timing"] == "not-measured"


def _report(result: dict, **extra) -> dict:
    base = {"precision": "strict", "reduced_precision": False, "stage_seconds": {"load": 1.0}}
    return {"problem": {"name": "p"}, "result": {**base, **result}, **extra}


def test_report_says_speed_not_measured_and_prints_no_none():
    r = JobResult("fallback", "no-gpu: interpreter", timing="not-measured", timing_note=NO_GPU_TIMING).to_dict()
    md = render_markdown(_report(r, search=[{"target": "k", "attempts": 3, "passed": 2, "best_kernel_speedup": None,
                                             "stopped_reason": None}],
                                 targets=[{"name": "k", "kind": "pointwise", "share": 0.5, "searched": True,
                                           "reason": None}]))
    assert f"- Speed: not measured ({NO_GPU_TIMING})" in md
    assert "Speedup vs compiler baseline" not in md and "1.000x" not in md
    assert "no kernel speedup measured" in md
    assert "None" not in md, md


def test_report_of_a_failed_job_and_of_a_measured_one():
    failed = JobResult("failed", "x.py failed to import")
    failed.not_measured("the job failed before anything was timed")
    md = render_markdown(_report(failed.to_dict()))
    assert "- Speed: not measured (the job failed before anything was timed)" in md and "None" not in md
    ok = JobResult("optimized", "speedup 1.25x >= gamma 1.03", speedup=1.25, baseline_ms=2.0, optimized_ms=1.6,
                   noise_pct=0.5).to_dict()
    md = render_markdown(_report(ok, search=[{"target": "k", "attempts": 3, "passed": 2, "best_kernel_speedup": 1.31,
                                              "stopped_reason": "iterations"}]))
    assert "- Speedup vs compiler baseline: **1.250x** (baseline 2.0000 ms, deployed 1.6000 ms, noise 0.50%)" in md
    assert "best kernel speedup 1.310x; stopped: iterations" in md
    kept = JobResult("fallback", "timeout: compile", speedup=1.0).to_dict()  # the compiler's code, no times
    assert ("- Speedup vs compiler baseline: **1.000x** (the compiler's own code is deployed; the job ended "
            "before timing it)\n") in render_markdown(_report(kept))


def test_a_result_with_an_emulated_gemm_states_its_construction_and_rho():
    ok = JobResult("optimized", "speedup 1.69x", speedup=1.69, baseline_ms=2.8, optimized_ms=1.7, noise_pct=0.3)
    emulation = [{"target": "_kernelopt_group_1", "method": "presplit", "precision": "fp32-emulated",
                  "construction": "Triton 3xTF32 on operands split once", "rho": 0.2401, "policy": "strict"}]
    md = render_markdown(_report(ok.to_dict(), emulation=emulation))
    assert "computes in reduced precision: no" in md
    assert ("- `_kernelopt_group_1`: GEMM by `presplit`, fp32 emulated on tensor cores: Triton 3xTF32 on operands "
            "split once; Gate 3 ρ (error vs float64 over the baseline's) 0.24, policy `strict`") in md
    auto = [{**emulation[0], "method": "auto", "resolved_method": "presplit"}]
    assert "GEMM by `auto` (ran `presplit`), fp32 emulated" in render_markdown(_report(ok.to_dict(), emulation=auto))
    tf32 = [{**emulation[0], "method": "tf32", "precision": "tf32", "rho": None, "policy": "tf32"}]
    md = render_markdown(_report({**ok.to_dict(), "precision": "tf32", "reduced_precision": True}, emulation=tf32))
    assert "tf32 (reduced precision)" in md and "ρ (error vs float64 over the baseline's) not measured" in md
    assert "None" not in md


def test_the_report_states_what_the_baselines_library_calls_computed_in():
    from kernelopt.pipeline.report import library_math_line

    ok = JobResult("fallback", "no-faster-candidate: x", speedup=1.0, baseline_ms=2.0, optimized_ms=2.0).to_dict()
    capture = {"library_math": {"cuda.matmul.allow_tf32": False, "cudnn.allow_tf32": True,
                                "float32_matmul_precision": "highest"}}
    md = render_markdown(_report(ok, capture=capture))
    assert ("cuBLAS fp32 GEMMs in IEEE fp32 (`cuda.matmul.allow_tf32` = False), cuDNN fp32 convolutions in TF32 "
            "(`cudnn.allow_tf32` = True, PyTorch default)") in md
    assert library_math_line({}) is None  # a capture from before the field: nothing claimed
    # torch records the same flags on a CPU build, where no cuDNN or cuBLAS call ran: nothing claimed
    assert library_math_line({**capture, "device_name": "cpu"}) is None
    assert library_math_line({**capture, "device_name": "NVIDIA H200"}) is not None
    # a bf16 job's GEMMs obey another flag: the line states that one, not the fp32 modes
    bf16 = {"library_math": {**capture["library_math"], "cuda.matmul.allow_bf16_reduced_precision_reduction": True}}
    md = render_markdown(_report({**ok, "dtype": "bf16"}, capture=bf16))
    assert ("cuBLAS bf16 GEMMs with reduced-precision reductions allowed (e.g. split-K partial sums in bf16) "
            "(`cuda.matmul.allow_bf16_reduced_precision_reduction` = True, PyTorch default)") in md
    assert "fp32 GEMMs" not in md
    assert "disallowed" in library_math_line(
        {"library_math": {"cuda.matmul.allow_fp16_reduced_precision_reduction": False}}, "fp16")
    assert library_math_line(capture, "bf16") is None  # recorded before the flag was: nothing claimed


def test_outcomes_and_cause_codes_are_one_list():
    """core.outcome is the one list: an unknown outcome or fallback/match cause code is refused
    where the result is made; the API's Literal and the service's counts use the same names."""
    import typing

    from kernelopt.api.schemas import Outcome as ApiOutcome
    from kernelopt.core.outcome import OUTCOMES, Cause, Outcome
    from kernelopt.service.job_queries import StatsTally

    assert typing.get_args(ApiOutcome) == OUTCOMES == ("optimized", "matched", "fallback", "failed")
    r = JobResult("fallback", f"{Cause.LIBRARY_DOMINATED}: 99% in cuBLAS", speedup=1.0)
    assert r.outcome is Outcome.FALLBACK and r.to_dict()["cause"].startswith("library-dominated: ")
    assert json.loads(json.dumps(r.to_dict()))["outcome"] == "fallback"  # serialises as its bare value
    for bad in (lambda: JobResult("fallback", "made-up-code: x"), lambda: JobResult("matched", "no code"),
                lambda: JobResult("won", "speedup 9x")):
        with pytest.raises(ValueError):
            bad()
    assert JobResult("failed", "free text: a message for the user").outcome == "failed"  # failed causes are free
    assert set(StatsTally().outcomes) >= set(OUTCOMES)


def test_the_console_says_a_kept_baseline_was_not_timed():
    from kernelopt.cli.main import console_speed

    kept = JobResult("fallback", "graph-break: two graphs", speedup=1.0)  # ended after compile: nothing timed
    assert console_speed(kept) == ("speedup vs compiler baseline: 1.000x (the compiler's own code is deployed; "
                                   "the job ended before timing it)")
    timed = JobResult("fallback", "near-optimal: x", speedup=1.0, baseline_ms=2.0, optimized_ms=2.0, noise_pct=0.4)
    assert console_speed(timed) == "speedup vs compiler baseline: 1.000x (baseline 2.0000 ms, noise 0.40%)"
    assert console_speed(JobResult("failed", "no import")) == "speed: not measured"


def test_the_report_says_where_a_results_reduced_precision_is():
    # level3/08 under `strict` on the H200 (2026-12-03): a fallback said "deployed code computes in reduced
    # precision: yes" — true (its cuDNN convolution runs TF32 by PyTorch's default) but read as KernelOPT's doing.
    conv = "1 cuDNN convolution call(s) on fp32 data run in TF32 (`cudnn.allow_tf32` = True, PyTorch default): x"
    kept = JobResult("fallback", "no-faster-candidate: x", speedup=1.0, baseline_ms=2.0, optimized_ms=2.0).to_dict()
    md = render_markdown(_report({**kept, "reduced_precision": True}, baseline_reduced_precision=[conv]))
    assert f"computes in reduced precision: yes, in the compiler's own code: {conv}\n" in md
    ok = JobResult("optimized", "speedup 1.5x", speedup=1.5, baseline_ms=2.0, optimized_ms=1.3).to_dict()
    tf32 = "line 9: tl.dot without input_precision=\"ieee\": fp32 inputs compute in TF32 by default"
    md = render_markdown(_report({**ok, "reduced_precision": True}, baseline_reduced_precision=[conv],
                                 deployed_reduced_precision=[tf32, conv]))
    assert (f"computes in reduced precision: yes, in the replacements: {tf32} / in the compiler's own code left "
            f"in place: {conv}\n") in md
    md = render_markdown(_report({**ok, "reduced_precision": True}, deployed_reduced_precision=[tf32]))
    assert f"computes in reduced precision: yes, in the replacements: {tf32}\n" in md
    # a replacement that removed one of two convolutions: the library marker left differs from the baseline's
    one_conv = conv.replace("1 cuDNN", "1 of 2 cuDNN")
    md = render_markdown(_report({**ok, "reduced_precision": True}, baseline_reduced_precision=[conv],
                                 deployed_reduced_precision=[one_conv], replacement_reduced_precision=[]))
    assert f"computes in reduced precision: yes, in the compiler's own code left in place: {one_conv}\n" in md
    assert "computes in reduced precision: no\n" in render_markdown(_report(ok))
    # an optimized result of a report that recorded no markers says only yes, not whose
    assert "computes in reduced precision: yes\n" in render_markdown(_report({**ok, "reduced_precision": True}))


def test_every_convolution_jobs_report_states_the_convolutions_math_in_baseline_and_deployed_code():
    """Issue 27, item 3: a strict result against a baseline whose cuDNN convolutions ran TF32 says so next to
    the speedup, and the convolutions' math is stated for baseline and deployed code alike."""
    capture = {"library_math": {"cuda.matmul.allow_tf32": False, "cudnn.allow_tf32": True},
               "device_name": "NVIDIA H200"}
    graph = {"library_calls": ["extern_kernels.convolution", "extern_kernels.convolution", "extern_kernels.mm"]}
    ok = JobResult("optimized", "speedup 1.1x", speedup=1.1, baseline_ms=2.0, optimized_ms=1.8).to_dict()
    autotuned = [{"target": "_kernelopt_group_2", "op": "convolution", "method": "cudnn-benchmark",
                  "precision": "library", "construction": "the same cuDNN convolution, algorithm timed",
                  "rho": 1.02, "policy": "strict"}]
    md = render_markdown(_report(ok, capture=capture, graph=graph, emulation=autotuned))
    assert ("**1.100x** (baseline 2.0000 ms, deployed 1.8000 ms) — against a baseline whose cuDNN convolutions "
            "ran in TF32") in md
    assert ("- Convolutions (2 cuDNN call(s)): baseline in TF32 (`cudnn.allow_tf32` = True, PyTorch default); "
            "deployed: `_kernelopt_group_2` by `cudnn-benchmark` (in TF32, the baseline mode); 1 left to cuDNN as "
            "the compiler called it, in TF32\n") in md
    assert ("`_kernelopt_group_2`: convolution by `cudnn-benchmark`, the library in the caller's math mode, the "
            "baseline's") in md
    split = [{**autotuned[0], "method": "split3", "precision": "fp32-emulated"}]
    assert "by `split3` (fp32 emulated on tensor cores)" in render_markdown(
        _report(ok, capture=capture, graph=graph, emulation=split))
    kept = JobResult("fallback", "near-optimal: x", speedup=1.0, baseline_ms=2.0, optimized_ms=2.0).to_dict()
    md = render_markdown(_report(kept, capture=capture, graph=graph))
    assert "baseline in TF32 (`cudnn.allow_tf32` = True, PyTorch default); deployed: the baseline's own code" in md
    ieee = {**capture, "library_math": {"cudnn.allow_tf32": False}}
    md = render_markdown(_report(ok, capture=ieee, graph=graph, emulation=autotuned))
    assert "baseline in IEEE fp32" in md and "against a baseline whose" not in md
    # no convolution, a CPU job, a bf16 job: no line
    for report in (_report(ok, capture=capture, graph={"library_calls": ["extern_kernels.mm"]}),
                   _report(ok, capture={**capture, "device_name": "cpu"}, graph=graph),
                   _report({**ok, "dtype": "bf16"}, capture=capture, graph=graph)):
        assert "Convolutions (" not in render_markdown(report) and "against a baseline whose" not in render_markdown(report)
