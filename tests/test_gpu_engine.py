"""The engine on a real GPU: capture, bit-exact re-stitch, kernel harness, gates on
real captured inputs, and whole jobs. Run with `scripts/test --gpu` on a GPU machine
(the whole GPU suite must finish within 10 minutes on one H200).
"""
import json
from pathlib import Path

import pytest

from kernelopt.compiled.capture import CaptureRequest, capture_model
from kernelopt.compiled.decompose import decompose
from kernelopt.isolation import run_in_child
from tests import TESTS_DIR

pytestmark = pytest.mark.gpu

PROBLEMS = Path(__file__).parent / "testdata" / "problems"
# graph_break is refused by capture by design (tests/test_capture_graphs.py; on the GPU below)
ALL = sorted(p.stem for p in PROBLEMS.glob("*.py") if p.stem != "graph_break")


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    """Every test-data problem captured on this GPU; with KERNELOPT_CAPTURE_DIR set, the
    captures land there (that is how tests/testdata/captured is refreshed)."""
    import os

    keep = os.environ.get("KERNELOPT_CAPTURE_DIR")
    out = {}
    for name in ALL:
        workdir = Path(keep) / name if keep else tmp_path_factory.mktemp(name)
        out[name] = run_in_child(capture_model, CaptureRequest(str(PROBLEMS / f"{name}.py"), str(workdir)),
                                 timeout_s=600, scratch=workdir, read_only=TESTS_DIR)
    return out


def test_restitch_with_nothing_replaced_is_bit_exact_on_gpu(captures):
    # nondeterministic_op's library call differs run to run by design (test data of issue 9, item 3)
    not_exact = [(name, cg.restitch_max_abs_diff, len(cg.kernel_configs)) for name, cg in captures.items()
                 if not cg.restitch_bit_exact and name != "nondeterministic_op"]
    assert not_exact == []
    nd = captures["nondeterministic_op"]
    assert nd.reproduction == "within-nondeterminism" and 0 < nd.nondeterminism_max_abs_diff < 1e-3
    for cg in captures.values():
        assert cg.torch_version and cg.device_name.startswith("NVIDIA")
        # issue 8: what the GPU's baseline convolutions computed in is read there, not assumed
        assert set(cg.library_math) == {"cuda.matmul.allow_tf32", "cudnn.allow_tf32", "float32_matmul_precision",
                                        "cuda.matmul.allow_bf16_reduced_precision_reduction",
                                        "cuda.matmul.allow_fp16_reduced_precision_reduction"}


def test_every_tuned_kernel_has_its_config_pinned(captures):
    for name, cg in captures.items():
        graph = decompose(Path(cg.module_path).read_text())
        for kernel in graph.kernels:
            assert kernel in cg.kernel_configs, (name, kernel)


def _kernel_io(arg):
    workdir, problem, kernel = arg
    from kernelopt.compiled import runtime
    from kernelopt.compiled.kernel_io import capture_kernel_io, output_indexes
    from kernelopt.compiled.restitch import ModelContext

    ctx = ModelContext(problem, workdir)
    mod = ctx.module()
    graph = decompose(Path(ctx.captured.module_path).read_text())
    arg_names = graph.kernels[kernel].arg_names
    args = ctx.flat_args(ctx.inputs(1))
    ios = capture_kernel_io(mod, kernel, lambda m: runtime.call_module(m, args), poison=output_indexes(arg_names))
    io = ios[0]
    return {"written": io.written(), "outputs": output_indexes(arg_names), "n_args": len(io.before)}


def test_kernel_harness_captures_real_inputs_and_outputs(captures):
    cg = captures["reduction_sum_dim"]
    info = run_in_child(_kernel_io, (str(cg.workdir), str(PROBLEMS / "reduction_sum_dim.py"),
                                     "triton_red_fused_mul_sum_0"), timeout_s=300, scratch=cg.workdir, read_only=TESTS_DIR)
    assert info["outputs"] == [1]
    assert info["written"] == [1]


def _search_one(arg):
    workdir, problem, kernel = arg
    from kernelopt.compiled.decompose import decompose as dec
    from kernelopt.compiled.graph import CapturedGraph
    from kernelopt.pipeline.model_job import _target
    from kernelopt.search.evaluate import EvalBatch, EvalContext, evaluate_batch
    from kernelopt.search.generators.launch_config import LaunchConfigGenerator

    cg = CapturedGraph.load(workdir)
    graph = dec(Path(cg.module_path).read_text())
    target = _target(cg, graph, kernel, 1.0)
    cands = LaunchConfigGenerator().propose(target, [], [], 6)
    attempts = evaluate_batch(EvalBatch(EvalContext(problem, workdir, target, [1, 2, 3]), cands))
    return [(a.passed, a.gate, a.feedback, a.kernel_ms) for a in attempts]


@pytest.mark.parametrize("name, kernel", [("reduction_sum_dim", "triton_red_fused_mul_sum_0"),
                                          ("pointwise_gelu_scale", None)])
def test_launch_config_candidates_pass_gates_on_real_inputs(captures, name, kernel):
    cg = captures[name]
    kernel = kernel or next(iter(decompose(Path(cg.module_path).read_text()).kernels))
    results = run_in_child(_search_one, (str(cg.workdir), str(PROBLEMS / f"{name}.py"), kernel), timeout_s=300,
                           scratch=cg.workdir, read_only=TESTS_DIR)
    assert results, "the generator proposed nothing"
    passed = [r for r in results if r[0]]
    assert passed, results
    assert all(r[3] is not None and r[3] > 0 for r in passed)


def _device_gib() -> float:
    import torch

    return torch.cuda.get_device_properties(0).total_memory / 2**30 if torch.cuda.is_available() else 0.0


# its capture (input, eager's output, the compiled output and Inductor's own) asked for 24 GiB more with 60 GiB held
# on an H100 (79 GiB): this test is sized for an H200
@pytest.mark.skipif(_device_gib() < 100, reason="the 12 GiB problem's capture needs about 84 GiB: an H200's memory")
def test_gate2_holds_one_seed_at_a_time_for_a_12_gib_kernel(tmp_path):
    """Issue 9, item 1: a 12 GiB input, its output and three seeds do not fit on one H200; Gate 2 judges
    candidates with one seed recorded at a time, never 'could not run the reference' for memory."""
    path = str(Path(__file__).parent.parent / "benchmarks" / "problems" / "level1" / "20_leaky_relu_12gib.py")
    reads = (*TESTS_DIR, path)  # the suite's functions and the problem, a file of benchmarks/
    cg = run_in_child(capture_model, CaptureRequest(path, str(tmp_path)), timeout_s=600, scratch=tmp_path, read_only=reads)
    kernel = next(iter(decompose(Path(cg.module_path).read_text()).kernels))
    results = run_in_child(_search_one, (str(tmp_path), path, kernel), timeout_s=600, scratch=tmp_path, read_only=reads)
    assert results and not [r for r in results if "could not run the reference" in (r[2] or "")], results
    assert [r for r in results if r[0]], results


def _profile(arg):
    workdir, problem = arg
    from kernelopt.compiled.graph import CapturedGraph
    from kernelopt.profiling.baseline import ProfileRequest, profile_baseline

    graph = decompose(Path(CapturedGraph.load(workdir).module_path).read_text())
    return profile_baseline(ProfileRequest(problem, workdir, list(graph.kernels),
                                           kernel_args={n: k.arg_names for n, k in graph.kernels.items()},
                                           library_steps={st.index: st.line for st in graph.library_steps()}))


def test_each_library_call_has_its_own_share_and_together_no_more_than_the_library(tmp_path):
    """A transformer block's GEMMs run the same cuBLAS kernels: by kernel name each would get all of their
    time; timed from its own launch each call has its own share, and the calls add up to the library's."""
    path = str(Path(__file__).parent.parent / "benchmarks" / "problems" / "level3" / "04_causal_self_attention.py")
    reads = (*TESTS_DIR, path)
    run_in_child(capture_model, CaptureRequest(path, str(tmp_path)), timeout_s=600, scratch=tmp_path, read_only=reads)
    prof = run_in_child(_profile, (str(tmp_path), path), timeout_s=300, scratch=tmp_path, read_only=reads)
    from kernelopt.compiled.graph import CapturedGraph

    steps = decompose(Path(CapturedGraph.load(str(tmp_path)).module_path).read_text()).library_steps()
    assert {str(st.index) for st in steps} == set(prof.library_calls), (prof.notes, [st.target for st in steps])
    assert all(v > 0 for v in prof.library_calls.values()), prof.library_calls
    assert sum(prof.library_calls.values()) <= prof.library_share + 1e-9 <= 1.0 + 1e-9


@pytest.mark.parametrize("problem", ["level1/01_gelu_tanh.py", "level1/10_softmax.py"])
def test_roofline_bytes_describe_the_kernels(tmp_path, problem):
    """The memory roofline is measured, and the byte count never has a big kernel beat it by much."""
    path = str(Path(__file__).parent.parent / "benchmarks" / "problems" / problem)
    reads = (*TESTS_DIR, path)  # the suite's functions and the problem, a file of benchmarks/
    run_in_child(capture_model, CaptureRequest(path, str(tmp_path)), timeout_s=600, scratch=tmp_path, read_only=reads)
    prof = run_in_child(_profile, (str(tmp_path), path), timeout_s=300, scratch=tmp_path, read_only=reads)
    assert not any("roofline not measured" in n for n in prof.notes), prof.notes
    assert 1000 < prof.bandwidth_gbps < 10000, prof.bandwidth_gbps  # an H200 copies at ~4.3 TB/s
    triton = [k for k in prof.kernels if k.kind == "triton"]
    assert triton and all(k.bytes_moved for k in triton)
    fractions = {k.name: k.roofline_fraction for k in triton if k.roofline_fraction is not None}
    assert fractions, "these kernels move GBs: each should get a roofline fraction"
    assert all(0 < f < 1.25 for f in fractions.values()), fractions


def test_whole_job_ends_with_an_outcome_and_artifacts(tmp_path):
    from kernelopt.pipeline.check import CheckRequest, run_check
    from kernelopt.pipeline.job import run_job
    from kernelopt.pipeline.options import JobOptions

    result = run_job(str(PROBLEMS / "softmax_rows.py"), tmp_path, JobOptions(time_budget_s=400))
    assert result.outcome in ("optimized", "matched", "fallback"), result
    assert set(result.stage_seconds) >= {"load", "compile", "decompose", "profile"}
    for name in ("report.json", "report.md", "baseline_module.py", "optimized_module.py", "trajectory.jsonl",
                 "events.jsonl"):
        assert (tmp_path / name).exists(), name
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["result"]["outcome"] == result.outcome
    check = run_check(CheckRequest(str(tmp_path / "optimized_module.py"), str(PROBLEMS / "softmax_rows.py")))
    assert check["passed"], check["summary"]


def test_nsight_compute_profiles_a_kernel_in_the_sandbox(tmp_path):
    """Issue 10, item 1: ncu in the job's sandboxed child, as a job would run it."""
    from kernelopt.profiling.ncu import NcuRequest, find_ncu, ncu_profile

    exe = find_ncu()
    if exe is None:
        pytest.skip("no ncu on this machine")
    # its own capture (not the module fixture's eleven): ncu's figures are what this test is about
    cg = run_in_child(capture_model, CaptureRequest(str(PROBLEMS / "pointwise_gelu_scale.py"), str(tmp_path)),
                      timeout_s=600, scratch=tmp_path, read_only=TESTS_DIR)
    kernel = next(iter(decompose(Path(cg.module_path).read_text()).kernels))
    res = run_in_child(ncu_profile, NcuRequest(str(PROBLEMS / "pointwise_gelu_scale.py"), str(cg.workdir), [kernel],
                                               ncu=exe), timeout_s=600, scratch=cg.workdir, read_only=TESTS_DIR)
    assert res.available, res.note
    k = res.kernels[kernel]
    # the rows ncu exported for the figures checked below (profiling/ncu.py keeps the CSV beside its report)
    rows = [line for csv in Path(cg.workdir).rglob("details.csv") for line in csv.read_text().splitlines()
            if "Duration" in line or "Throughput" in line]
    assert k["unparsed_units"] == {}, (k, rows)  # names the unit text where a figure did not parse
    assert 0 < k["memory_sol_pct"] <= 100 and k["duration_ms"] and k["registers"] > 0, (k, rows)
    assert k["dram_bytes_per_s"] and k["dram_bytes_per_s"] > 1e9, (k, rows)


def test_a_bf16_job_casts_the_model_declines_fp32_only_generators_and_checks_in_bf16(tmp_path):
    """Issue 8, item 5: a suite problem whose time is a cuBLAS GEMM, run in bf16 (not yet run on a GPU)."""
    from kernelopt.pipeline.check import CheckRequest, run_check
    from kernelopt.pipeline.job import run_job
    from kernelopt.pipeline.options import JobOptions

    problem = Path(__file__).resolve().parent.parent / "benchmarks" / "problems" / "level2" / "01_linear_bias_gelu.py"
    result = run_job(str(problem), tmp_path, JobOptions(dtype="bf16", time_budget_s=400))
    assert result.outcome in ("optimized", "matched", "fallback"), result
    assert (result.dtype, result.precision) == ("bf16", "strict")
    capture = json.loads((tmp_path / "capture.json").read_text())
    assert {a["dtype"] for a in capture["args"]} == {"bfloat16"}  # weights and input cast as optimize casts them
    report = json.loads((tmp_path / "report.json").read_text())
    if report.get("targets"):  # the fp32 emulation declined the bf16 GEMM group, saying why: in the strategy's
        # decision (a group no generator of the job applies to is no target, its Triton kernels weighed as
        # kernels) or, where the group was searched, in its search
        decided = json.dumps({k: report.get(k) for k in ("targets", "search")})
        assert "gemm_fp32 is made for fp32 data only" in decided, decided[:2000]
    check = run_check(CheckRequest(str(tmp_path / "optimized_module.py"), str(problem), dtype="bf16"))
    assert check["passed"] and check["dtype"] == "bf16", check["summary"]
    assert {s["metrics"]["rtol"] for s in check["seeds"]} == {1e-2}


def test_a_bf16_kernel_file_runs_on_the_gpu_not_the_interpreter(tmp_path):
    from kernelopt.pipeline.job import run_job
    from kernelopt.pipeline.options import JobOptions

    kernel = Path(__file__).resolve().parent.parent / "benchmarks" / "kernels" / "add_relu_kernel.py"
    result = run_job(str(kernel), tmp_path, JobOptions(dtype="bf16", time_budget_s=300))
    assert result.outcome in ("optimized", "matched", "fallback") and not result.cause.startswith("no-gpu"), result
    assert result.dtype == "bf16" and result.timing == "measured"


def test_a_gemm_inductor_gave_its_mm_template_is_searched_by_gemm_fp32(tmp_path):
    """Suite level1/18 (16384×32 · 32×16384): Inductor launches its own Triton mm template, not cuBLAS; until
    search/generators/gemm_template.py the group ended "no-candidates: the GEMM is a Triton template Inductor chose"."""
    from kernelopt.pipeline.check import CheckRequest, run_check
    from kernelopt.pipeline.job import run_job
    from kernelopt.pipeline.options import JobOptions

    problem = Path(__file__).resolve().parent.parent / "benchmarks" / "problems" / "level1" / "18_matmul_small_k.py"
    result = run_job(str(problem), tmp_path, JobOptions(time_budget_s=300))
    assert result.outcome in ("optimized", "matched", "fallback"), result
    report = json.loads((tmp_path / "report.json").read_text())
    searched = {s["target"]: s for s in report.get("search") or []}
    groups = [s for name, s in searched.items() if name.startswith("_kernelopt_group_")]
    if "triton_tem_fused_mm" not in (tmp_path / "baseline_module.py").read_text():
        pytest.skip("Inductor chose cuBLAS for this GEMM on this machine: no template to read")
    assert groups and groups[0]["attempts"] > 0 and groups[0]["passed"] > 0, report.get("search")
    if result.outcome == "optimized":
        check = run_check(CheckRequest(str(tmp_path / "optimized_module.py"), str(problem)))
        assert check["passed"], check["summary"]


def test_a_sum_after_a_gemm_is_deployed_as_the_rewritten_graph(tmp_path):
    """Suite level2/05 (linear 2048 -> 4096, then a sum over the outputs): the rewrite stage's whole-graph
    candidate (a matrix-vector product with summed weight rows) passes Gates 1-4 and is deployed."""
    from kernelopt.pipeline.check import CheckRequest, run_check
    from kernelopt.pipeline.job import run_job
    from kernelopt.pipeline.options import JobOptions

    problem = Path(__file__).resolve().parent.parent / "benchmarks" / "problems" / "level2" / "05_linear_sum.py"
    result = run_job(str(problem), tmp_path, JobOptions(time_budget_s=300, generators=["graph_rewrite"]))
    report = json.loads((tmp_path / "report.json").read_text())
    assert result.outcome == "optimized", (result, report.get("rewrite"))
    assert report["rewrite"]["verdict"] == "deployed"
    assert [a["identity"] for a in report["rewrite"]["applied"]] == ["gemm-row-map"]
    check = run_check(CheckRequest(str(tmp_path / "optimized_module.py"), str(problem)))
    assert check["passed"], check["summary"]
