"""Writes report.json and trajectory.jsonl of tests/testdata/ui: a model job's artifacts built from the
engine's own dataclasses and serialised by pipeline/report.py's to_jsonable, keyed as pipeline/job.py
and pipeline/model_job.py key them, so the dashboard's tests read exactly the engine's shapes.

The figures follow a real H200 run (benchmarks/results/2026-12-01-h200-level2-strict/reports/
06_linear_layernorm_residual.md: optimized 1.732x, an fp32-emulated GEMM group, rho 0.272); the
candidates' plans, the NCU figures and the LLM usage are made up for the test. Not a measurement.

    .venv/bin/python tests/testdata/ui/make_report.py
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from kernelopt.agents.llm import Usage  # noqa: E402
from kernelopt.pipeline.device import DeviceInfo  # noqa: E402
from kernelopt.pipeline.options import JobOptions, JobResult  # noqa: E402
from kernelopt.pipeline.report import render_markdown, to_jsonable  # noqa: E402
from kernelopt.profiling.baseline import BaselineProfile, KernelShare  # noqa: E402
from kernelopt.profiling.ncu import NcuKernel, NcuResult, NcuRule  # noqa: E402
from kernelopt.search.strategy import TargetDecision  # noqa: E402
from kernelopt.verify.waterfall import WaterfallResult, WaterfallStep  # noqa: E402

GROUP, LN, GEMM = "_kernelopt_group_1", "triton_red_fused_add_native_layer_norm_0", \
    "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize256x64x8_stage3_warpsize"
ACCEPTED = "64abb737adfc"

profile = BaselineProfile(end_to_end_ms=1.4297, noise_pct=0.4, timing_method="do_bench", gpu_total_ms=1.4332,
                          kernels=[KernelShare(GEMM, "library", 1.3824, 0.965),
                                   KernelShare(LN, "triton", 0.0508, 0.035, registers=30, spills=0,
                                               bytes_moved=201_457_664, achieved_gbps=3965.0,
                                               roofline_fraction=0.933)],
                          library_share=0.965, triton_share=0.035, bandwidth_gbps=4250.0)
ncu_ln = NcuKernel(LN, duration_ms=0.0497, compute_sol_pct=21.0, memory_sol_pct=91.0, registers=30,
                   achieved_occupancy_pct=78.0, shared_mem_bytes=0, tier="memory-bound",
                   rules=[NcuRule("MemoryL2Compression", "OPT", "compressible", "global", 4.0)])
targets = [TargetDecision(GROUP, "group:addmm", 1.0, True, "library group addmm + 1 epilogue kernel(s): at most "
                          "100.0% of GPU time"),
           TargetDecision(LN, "reduction", 0.035, False, "too small to clear gamma=1.03: 3.5% of GPU time, Amdahl "
                          "ceiling 1.037x < 1.042x", tier="memory-bound", roofline_fraction=0.933,
                          roofline_ceiling=1.002, ncu=to_jsonable(ncu_ln))]
result = JobResult("optimized", "speedup 1.732x >= gamma 1.03 with 1 kernel(s)/group(s) replaced; Gate 3 rho, rho "
                   "0.272; _kernelopt_group_1: GEMM by auto (fp32-emulated), rho 0.272", speedup=1.7316,
                   baseline_ms=1.4279, optimized_ms=0.8246, noise_pct=0.19, precision="strict",
                   reduced_precision=True,
                   stage_seconds={"load": 5.1, "compile": 28.2, "decompose": 0.0, "profile": 3.2, "search": 23.7,
                                  "verify": 25.8})
# The search: (id, parent, generator, plan, passed, gate, feedback, kernel_ms)
attempts = [
    ("a1b2c3d4e5f6", None, "gemm_fp32", "split-3xTF32 GEMM, BLOCK 128x128x32", True, "timed", "", 0.8611),
    (ACCEPTED, "a1b2c3d4e5f6", "gemm_fp32", "auto: 3xTF32 with the layer-norm epilogue fused", True, "timed", "",
     0.7922),
    ("0f0e0d0c0b0a", "a1b2c3d4e5f6", "gemm_fp32", "BLOCK 256x128x32, 8 warps", False, "gate1",
     "out of shared memory: 147456 bytes > 101376", None),
    ("9a8b7c6d5e4f", None, "llm", "vectorised epilogue with a persistent grid", False, "gate2",
     "seed 1: max |diff| 3.1e-02 > allclose(1e-3)", None),
    ("77aa88bb99cc", None, "launch_config", "num_warps 8, num_stages 4", True, "timed", "", 1.3901),
]
trajectory = [{"target": GROUP, "candidate_id": cid, "parent": parent, "generator": gen, "plan": plan,
               "params": {"method": "auto", "precision": "fp32-emulated"} if gen == "gemm_fp32" else {},
               "passed": passed, "gate": gate, "feedback": feedback or f"kernel {ms} ms", "kernel_ms": ms,
               "baseline_kernel_ms": 1.3824, "metrics": {}} for cid, parent, gen, plan, passed, gate, feedback, ms
              in attempts]
wf = WaterfallResult({GROUP: ACCEPTED}, True, 1.7316, "the fastest combination passed",
                     [WaterfallStep({GROUP: ACCEPTED}, True, 1.7316, "fastest combination")])
report = {
    "problem": {"path": "/work/problems/06_linear_layernorm_residual.py", "name": "06_linear_layernorm_residual"},
    "options": JobOptions(generators=["launch_config", "gemm_fp32", "llm"]).to_dict(),
    "device": DeviceInfo(True, "NVIDIA H200", 1, "2.13.0", "3.5.0", True),
    "context_timings": {"eager": 1.4636, "torch.compile": 1.4179},
    "profile": profile,
    "ncu": NcuResult(True, "profiled 1 kernel in 41.0 s", {LN: to_jsonable(ncu_ln)}, 41.0, "2025.3.1"),
    "targets": targets,
    "baseline_reduced_precision": [],
    "search": [{"target": GROUP, "attempts": len(attempts), "passed": 3, "best_kernel_speedup": 1.745,
                "stopped_reason": "exhausted", "required_kernel_speedup": 1.0309, "candidates_for_verification": 2,
                "harness_errors": []}],
    "llm": {"model": "test-model", "base_url": "http://127.0.0.1:8001/v1",
            **Usage(calls=3, failed_calls=0, prompt_tokens=5120, completion_tokens=2048, cost=0.0123).to_dict()},
    "waterfall": [f"{{'{GROUP}': '{ACCEPTED}'}}: Gate 3 passed (rho, rho 0.272); Gate 4 speedup 1.7316x "
                  "(noise 0.19%): pass"],
    "waterfall_steps": wf.to_dict(),
    "deployed_reduced_precision": ["tl.dot(input_precision='tf32')"],
    "emulation": [{"target": GROUP, "generator": "gemm_fp32", "method": "auto", "resolved_method": "3xtf32",
                   "precision": "fp32-emulated", "construction": "split each fp32 operand into a TF32 high part and "
                   "a TF32 residual, three tensor-core products", "rho": 0.272, "rho_max_over_seeds": 0.272,
                   "policy": "strict"}],
    "result": result.to_dict(),
}
report = to_jsonable(report)
report["result"]["artifacts"] = ["report.json", "report.md", "trajectory.jsonl"]
render_markdown(report)  # the engine's own renderer accepts it
(HERE / "report.json").write_text(json.dumps(report, indent=1) + "\n")
(HERE / "trajectory.jsonl").write_text("".join(json.dumps(to_jsonable(r)) + "\n" for r in trajectory))
