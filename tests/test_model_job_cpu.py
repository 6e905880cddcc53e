"""Model mode's stages after loading, on Inductor's CPU backend.

On the CPU Inductor emits C++ kernels and no Triton: the job must go through
capture, decompose, profile and strategy, end in a fallback with the cause
"no-triton-kernels", and still write every artifact (the deployed model is the
compiler's). The Triton search and Gates 3-4 on a model run in the GPU suite.
"""
import importlib.util
import json
from pathlib import Path

import torch

from tests.cpu_job import cpu_model_job

PROBLEM = Path(__file__).parent / "testdata" / "problems" / "layernorm_residual.py"


def test_cpu_model_job_falls_back_with_cause_and_artifacts(tmp_path):
    ctx, result = cpu_model_job(PROBLEM, tmp_path)
    assert result.outcome == "fallback"
    assert result.cause.startswith("no-triton-kernels: ")
    assert result.speedup == 1.0 and result.baseline_ms > 0
    for name in ("baseline_module.py", "capture.json", "optimized_module.py", "profile.json"):
        assert (tmp_path / name).exists(), name
    assert ctx.report["graph"]["triton_kernels"] == {}
    assert json.loads((tmp_path / "capture.json").read_text())["restitch_bit_exact"] is True

    spec = importlib.util.spec_from_file_location("deployed_under_test", tmp_path / "optimized_module.py")
    deployed = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(deployed)
    torch.manual_seed(0)
    model = deployed.Model(*deployed.get_init_inputs())
    new = deployed.ModelNew(*deployed.get_init_inputs())
    new.load_state_dict(model.state_dict())
    x, y = deployed.get_inputs()
    with torch.no_grad():
        assert torch.allclose(new(x, y), model(x, y), rtol=1e-5, atol=1e-5)


def test_a_cpu_job_states_no_tf32_for_its_convolution(tmp_path):
    # PyTorch's cudnn.allow_tf32 is True on a CPU build too, and capture records it; the job states a
    # baseline convolution as TF32 only where cuDNN ran it (verify.precision.library_math_markers)
    ctx, result = cpu_model_job(PROBLEM.parent / "conv_bn_relu.py", tmp_path / "job")
    assert result.outcome == "fallback", result
    capture = json.loads((tmp_path / "job" / "capture.json").read_text())
    assert capture["library_math"]["cudnn.allow_tf32"] is True  # recorded, as on the GPU
    assert "convolution" in (tmp_path / "job" / "baseline_module.py").read_text()
    assert ctx.report["baseline_reduced_precision"] == [] and result.reduced_precision is False


def test_a_cpu_job_rewrites_the_graph_and_passes_gates_1_to_3_without_claiming_a_speed(tmp_path):
    # linear -> mean over 256 features -> softmax over the one left: the rewrite stage computes the mean
    # as a matrix-vector product, finds the model degenerate, and the rewritten graph passes Gates 1-3; with
    # no GPU, Gate 4 does not run and nothing is deployed (issue 34)
    ctx, result = cpu_model_job(PROBLEM.parent / "degenerate_mean_softmax.py", tmp_path / "job")
    rewrite = ctx.report["rewrite"]
    assert [a["identity"] for a in rewrite["applied"]][0] == "gemm-row-map"
    assert rewrite["flops_after"] * 100 < rewrite["flops_before"]
    assert rewrite["gate2"].passed and rewrite["gate3"].passed, rewrite
    assert "Gate 4 not run: no GPU" in rewrite["verdict"]
    assert any("input 0 of get_inputs()" in f and "only through whether the values are finite" in f
               for f in rewrite["findings"]), rewrite["findings"]
    assert result.outcome != "optimized" and "rewrite" in ctx.stage_seconds
    events = (tmp_path / "job" / "events.jsonl").read_text()
    assert "finding: the output depends on" in events
    assert (tmp_path / "job" / "graph_rewrite" / "baseline_module.py").exists()


def test_a_compile_that_fails_from_earlier_jobs_caches_is_done_again_without_them(tmp_path):
    # caches kept from earlier jobs (isolation.compile_cache) that break the compile (here Inductor's cache
    # folder is a file) are dropped, and the model compiled without them: the job still reaches its outcome
    workdir = tmp_path / "job"
    (workdir / ".cache").mkdir(parents=True)
    (workdir / ".cache" / "inductor").write_text("not a folder")
    ctx, result = cpu_model_job(PROBLEM, workdir, compile_caches=True)
    assert result.outcome == "fallback" and result.cause.startswith("no-triton-kernels: "), result
    assert ctx.report["compile_cache"]["files"] == 1
    assert "FileExistsError" in ctx.report["compile_cache"]["dropped"]
    messages = [json.loads(line)["message"] for line in (workdir / "events.jsonl").read_text().splitlines()]
    assert any(m.startswith("compiling from earlier jobs' compiler caches failed") for m in messages)
    assert (workdir / ".cache" / "inductor").is_dir()  # the second compile made its own
