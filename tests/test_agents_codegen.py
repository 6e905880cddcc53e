"""The codegen agent (`llm_codegen`, agents/codegen.py) against the scripted OpenAI-compatible server.

What it is sent is checked on a group Inductor wrote on an H200 (tests/testdata/captured_h200:
cuBLAS mm + a Triton bias/GELU epilogue), which needs no GPU to describe. Its candidates are
gated on the same kind of group captured here on Inductor's CPU backend (problems/
linear_relu_small: extern_kernels.addmm + a C++ ReLU-and-scale epilogue): the real Gates
1-2 in this process (search.evaluate.evaluate_batch on device "cpu", as
tests/test_library_groups.py gates gemm_fp32's candidates), the real beam search, and the job
context's own trajectory/transcript/experience writers. Gate 3 is verify.stitched_model's,
on the CPU.

The group is captured afresh (about 30 s) rather than read from tests/testdata/captured_cpu:
that module's C++ kernel was compiled for 16-lane (AVX-512) vectors, and on a CPU without them
its ReLU-and-scale epilogue computes wrong values, so a correct candidate would "fail" Gate 2
against it (module-against-module tests cannot see that).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelopt.agents.codegen import CodegenGenerator
from kernelopt.agents.generator import LLMGenerator
from kernelopt.agents.llm import LLMSettings
from kernelopt.compiled.group import library_groups
from kernelopt.pipeline.context import JobContext
from kernelopt.pipeline.model_job import _group_target
from kernelopt.pipeline.options import JobOptions
from kernelopt.search.beam import SearchConfig, search_kernel
from kernelopt.search.evaluate import EvalBatch, EvalContext, evaluate_batch
from kernelopt.search.generator import Attempt, Candidate, KernelTarget
from kernelopt.search.registry import GENERATORS, applicable, make_generator, uses_llm
from kernelopt.verify.stitched_model import StitchedRequest, gate3_stitched
from tests.llm_server import ScriptedLLM, fenced

DATA = Path(__file__).parent / "testdata"
H200 = DATA / "captured_h200"
PROBLEM = DATA / "problems" / "linear_relu_small.py"

# Candidate modules for the CPU group: run(arg1_1 bias [64], arg2_1 x [32, 48], arg0_1 weight [64, 48], buf0 out)
GOOD = '''import torch

KERNELOPT_PRECISION = "fp32"


def run(arg1_1, arg2_1, arg0_1, buf0, stream=None):
    """relu(x @ W.T + b) * 0.5, in fp32, written into the caller's buffer."""
    torch.addmm(arg1_1, arg2_1, arg0_1.t(), out=buf0)
    buf0.clamp_(min=0.0).mul_(0.5)
'''
WRONG = GOOD.replace("mul_(0.5)", "mul_(0.25)")  # the epilogue's scale got lost: Gate 2
TF32 = GOOD.replace('KERNELOPT_PRECISION = "fp32"', 'KERNELOPT_PRECISION = "tf32"')  # declares plain TF32
BF16 = GOOD.replace("torch.addmm(arg1_1, arg2_1, arg0_1.t(), out=buf0)",
                    "buf0.copy_(torch.addmm(arg1_1.bfloat16(), arg2_1.bfloat16(), arg0_1.t().bfloat16()))")
UNDECLARED = GOOD.replace('KERNELOPT_PRECISION = "fp32"\n', "")
# a cheat: computes on its first call only, later calls leave whatever the output buffer holds
STALE = GOOD + """

_launch = run
_CALLS = [0]


def run(arg1_1, arg2_1, arg0_1, buf0, stream=None):
    _CALLS[0] += 1
    if _CALLS[0] == 1:
        _launch(arg1_1, arg2_1, arg0_1, buf0)
"""
assert len({GOOD, WRONG, TF32, BF16, UNDECLARED, STALE}) == 6


def reply(code: str, strategy: str = "algorithmic-rewrite") -> str:
    return fenced(code, f"STRATEGY: {strategy}\nOne addmm into the output, then the epilogue in place.")


def user_text(request: dict) -> str:
    return "\n".join(m["content"] for m in request["body"]["messages"] if m["role"] == "user")


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def group_target(path: Path, precision: str = "strict") -> KernelTarget:
    (g,) = library_groups((path / "baseline_module.py").read_text())
    return _group_target(g, 1.0, precision)


@pytest.fixture(scope="module")
def cpu(cpu_capture) -> Path:
    """linear_relu_small compiled by Inductor's CPU backend on this machine: the capture's work directory."""
    return cpu_capture("linear_relu_small")


class CpuGates:
    """Gates 1-2 (and timing) of search.evaluate on the CPU capture, in this process."""

    def __init__(self, target: KernelTarget, workdir: Path):
        self.context = EvalContext(str(PROBLEM), str(workdir), target, [1, 2, 3], device="cpu")
        self.batches: list[list[Candidate]] = []

    def evaluate(self, candidates: list[Candidate]) -> list[Attempt]:
        self.batches.append(list(candidates))
        return evaluate_batch(EvalBatch(self.context, candidates))


def run_search(tmp_path: Path, cpu: Path, server: ScriptedLLM, script_len: int, precision: str = "strict",
               retries: int = 4):
    """The beam search with llm_codegen on the CPU group, recorded by a job context as a model job records it."""
    target = group_target(cpu, precision)
    ctx = JobContext(str(PROBLEM), tmp_path, JobOptions(generators=["llm_codegen"], executor_retries=retries),
                     llm_settings=LLMSettings.from_env(server.env()))
    gen = make_generator("llm_codegen")
    ctx.attach(gen)
    assert applicable(gen, target) is None
    gates = CpuGates(target, cpu)
    try:
        result = search_kernel(target, [gen], gates, SearchConfig(iterations=script_len, plans_per_iteration=1),
                               on_attempt=lambda a: ctx.record_attempt(target.name, a))
    finally:
        ctx.close()
    return result, gates, gen


# --- what the agent is told ----------------------------------------------------------------------------------

def test_the_request_holds_the_groups_aten_graph_interface_reference_and_policy():
    target = group_target(H200 / "01_linear_bias_gelu")
    target.profile.update({"roofline_fraction": 0.41, "ncu": {"duration_ms": 2.5, "dram_sol_pct": 38.0}})
    avoid = [{"strategy": "block-sizes", "attempts": 5, "successes": 0, "jobs": ["job-7"]}]
    with ScriptedLLM(["I would fuse the bias into the GEMM."]) as server:
        gen = CodegenGenerator(LLMSettings.from_env(server.env()))
        gen.avoid = avoid
        (cand,) = gen.propose(target, [], [], 1)
    (req,) = server.requests
    assert not server.planner_requests  # codegen plans in its own reply: no planner call
    system = req["body"]["messages"][0]["content"]
    assert "library group" in system and "KERNELOPT_PRECISION" in system
    text = user_text(req)
    # the reference: Inductor's own statements, as run() executes them
    assert "def run(arg2_1, arg0_1, arg1_1, arg3_1, buf0, stream=None):" in text
    assert "extern_kernels.mm(arg2_1, reinterpret_tensor(arg0_1, (1024, 4096), (1, 1024), 0), out=buf0)" in text
    assert "triton_poi_fused_add_addmm_gelu_0.run(buf1, arg1_1, arg3_1, 33554432, stream=stream0)" in text
    # the interface: every param with its role, dtype, shape and stride
    assert "`run(arg2_1, arg0_1, arg1_1, arg3_1, buf0, stream=None)`" in text
    assert "- `arg2_1` (in_ptr0, input: read only): float32, shape [8192, 1024], stride [1024, 1]" in text
    assert "- `buf0` (out_ptr0, output: written in place" in text and "shape [8192, 4096], stride [4096, 1]" in text
    # the ATen graph: the library op, the module's comments, the epilogue's graph fragment and its Triton source
    assert "aten `mm`" in text and "Original ATen: [aten.addmm, aten.add, aten.gelu]" in text
    assert "call_function[target=torch.ops.aten.erf.default]" in text and "gelu => add_1, erf, mul, mul_1, mul_2" in text
    assert "tmp9 = libdevice.erf(tmp8)" in text and "@triton.jit" in text
    assert "# kernel path:" not in text  # a cache path of the machine that compiled it
    # the policy as Gate 3 applies it, the profile, the memory and the AVOID list the planner reads
    assert "Precision policy: strict" in text and 'KERNELOPT_PRECISION = "tf32x3" or "bf16x6"' in text
    assert "Rejected whatever the error: plain TF32" in text
    assert "roofline: achieves 41% of the measured memory bandwidth" in text
    assert "Nsight Compute: duration_ms=2.5, dram_sol_pct=38.0" in text
    assert "Nothing has been tried on this kernel yet." in text
    assert "AVOID block-sizes: 0 of 5 attempts succeeded (jobs job-7)" in text
    # (e) a reply without code is no candidate: the reason, as LLMGenerator records it
    assert cand.generator == "llm_codegen" and cand.rejected and "prose only" in cand.rejected
    assert gen.usage()["agents"] == {"codegen": {"calls": 1, "prompt_tokens": gen.usage()["prompt_tokens"],
                                                 "completion_tokens": gen.usage()["completion_tokens"]}}


def test_under_tf32_the_policy_text_allows_tf32():
    target = group_target(H200 / "02_linear_swish_scale", precision="tf32")
    with ScriptedLLM(["no code"]) as server:
        CodegenGenerator(LLMSettings.from_env(server.env())).propose(target, [], [], 1)
    text = user_text(server.requests[0])
    assert "Precision policy: tf32" in text and 'declare `KERNELOPT_PRECISION = "tf32"`' in text
    assert "triton_poi_fused_addmm_mul_sigmoid_0" in text


# --- its candidates through the gates ---------------------------------------------------------------------------

def test_wrong_numerics_fail_gate2_the_feedback_returns_and_the_fix_passes(tmp_path, cpu):
    with ScriptedLLM([reply(WRONG), reply(GOOD, "operation-fusion")]) as server:
        result, gates, gen = run_search(tmp_path, cpu, server, 2)
    assert [a.gate for a in result.attempts] == ["gate2", "timed"], [a.feedback for a in result.attempts]
    wrong, good = result.attempts
    assert "seed" in wrong.feedback and not wrong.passed
    assert good.passed and good.kernel_ms and good.metrics["seeds"] == 3
    # (c) one conversation: the second request carries the first reply and Gate 2's feedback
    first, second = server.requests
    msgs = second["body"]["messages"]
    assert msgs[:2] == first["body"]["messages"]
    assert msgs[2] == {"role": "assistant", "content": reply(WRONG)}
    assert msgs[3]["role"] == "user" and "rejected at gate2" in msgs[3]["content"]
    assert wrong.feedback[:200] in msgs[3]["content"] and "attempt 1 of 4" in msgs[3]["content"]
    # (b) recorded in the trajectory as llm_codegen's, filed under the reply's own STRATEGY line
    traj = [t for t in records(tmp_path / "trajectory.jsonl") if "candidate_id" in t]
    assert [(t["generator"], t["gate"], t["passed"]) for t in traj] == [
        ("llm_codegen", "gate2", False), ("llm_codegen", "timed", True)]
    assert [t["params"]["strategy"] for t in traj] == ["algorithmic-rewrite", "operation-fusion"]
    assert traj[1]["parent"] == traj[0]["candidate_id"] and traj[0]["params"]["plan_id"] == traj[1]["params"]["plan_id"]
    transcripts = records(tmp_path / "transcripts.jsonl")
    assert [(t["agent"], t["call"]) for t in transcripts] == [("codegen", 1), ("codegen", 2)]
    items = records(tmp_path / "experience.jsonl")
    assert [(i["generator"], i["outcome"]) for i in items][0] == ("llm_codegen", "failed")
    assert gen.usage()["calls"] == 2


def test_a_module_that_leaves_stale_output_is_caught_at_gate2(tmp_path, cpu):
    with ScriptedLLM([reply(STALE)]) as server:
        result, _, _ = run_search(tmp_path, cpu, server, 1)
    (a,) = result.attempts
    assert (a.gate, a.passed) == ("gate2", False), a.feedback
    # Gate 2 poisons the outputs before each seed: an unlaunched call leaves the poison
    assert "never written" in a.feedback and "poison" in a.feedback, a.feedback


def test_malformed_and_undeclared_replies_are_no_candidates_and_their_reasons_go_back(tmp_path, cpu):
    script = ["I would rather describe it: an addmm, then relu and a scale.", reply(UNDECLARED), reply(GOOD)]
    with ScriptedLLM(script) as server:
        result, gates, _ = run_search(tmp_path, cpu, server, 3)
    assert [a.gate for a in result.attempts] == ["extract", "extract", "timed"], [a.feedback for a in result.attempts]
    assert "prose only" in result.attempts[0].feedback
    assert "does not declare its arithmetic" in result.attempts[1].feedback
    assert [len(b) for b in gates.batches] == [1]  # neither refusal reached the gates
    assert "rejected at extract" in user_text(server.requests[1]) and "prose only" in user_text(server.requests[1])
    assert "KERNELOPT_PRECISION" in server.requests[2]["body"]["messages"][-1]["content"]


def test_plain_tf32_passes_gates_1_2_but_gate3_rejects_it_under_strict(tmp_path, cpu):
    with ScriptedLLM([reply(TF32)]) as server:
        result, _, _ = run_search(tmp_path, cpu, server, 1)
    (a,) = result.attempts
    assert a.passed, a.feedback  # on a CPU its "TF32" addmm is fp32: no error for Gates 1-2 to see
    name = a.candidate.target
    req = dict(problem_path=str(PROBLEM), workdir=str(cpu), device="cpu", seeds=[101])
    strict = gate3_stitched(StitchedRequest(replacements={name: a.candidate.source}, precision="strict", **req))
    assert (strict.gate, strict.passed, strict.metrics["branch"]) == ("gate3", False, "reduced-precision")
    assert "declared 'tf32'" in strict.message
    # the policy decides, not the error: the same module passes Gate 3 under `tf32`, and GOOD under strict
    assert gate3_stitched(StitchedRequest(replacements={name: a.candidate.source}, precision="tf32", **req)).passed
    assert gate3_stitched(StitchedRequest(replacements={name: GOOD}, precision="strict", **req)).passed


def test_bf16_arithmetic_is_rejected_by_gate3_under_strict(cpu):
    (g,) = library_groups((cpu / "baseline_module.py").read_text())
    req = StitchedRequest(str(PROBLEM), str(cpu), {g.name: BF16}, precision="strict", device="cpu", seeds=[101])
    verdict = gate3_stitched(req)
    assert (verdict.gate, verdict.passed, verdict.metrics["branch"]) == ("gate3", False, "reduced-precision")
    assert "bfloat16" in verdict.message


# --- where it applies, and the job's one LLM session ---------------------------------------------------------------

def test_registry_entry_and_what_each_agent_declines(cpu):
    spec = GENERATORS["llm_codegen"]
    assert (spec.targets, spec.policies, spec.default, spec.llm) == (("group",), ("strict", "tf32"), False, True)
    assert uses_llm(["launch_config", "llm_codegen"]) and not uses_llm(["launch_config", "gemm_fp32"])
    group = group_target(cpu)
    kernel = KernelTarget("triton_poi_fused_0", "x = 1", "pointwise", ["in_ptr0"], {}, [16])
    assert "KERNELOPT_LLM_MODEL" in CodegenGenerator(LLMSettings()).applicable(group)
    configured = LLMSettings(base_url="http://127.0.0.1:9/v1", model="m")
    assert CodegenGenerator(configured).applicable(group) is None
    assert "library groups" in CodegenGenerator(configured).applicable(kernel)
    assert "llm_codegen" in LLMGenerator(configured).applicable(group)
    # the service's worker hands its LLM settings (and the team's AVOID list) to jobs naming either agent
    pytest.importorskip("sqlalchemy")  # the worker is the service's (the GPU machines run the engine alone)
    from kernelopt.worker.execute import llm_settings_for

    env = {"KERNELOPT_LLM_MODEL": "m", "KERNELOPT_LLM_BASE_URL": "http://127.0.0.1:9/v1"}
    assert llm_settings_for({"generators": ["llm_codegen"]}, env)["model"] == "m"
    assert llm_settings_for({"generators": ["gemm_fp32", "launch_config"]}, env) is None


def test_agents_of_one_job_share_one_session_and_one_call_numbering(tmp_path, cpu):
    with ScriptedLLM(["no code"]) as server:
        ctx = JobContext(str(PROBLEM), tmp_path, JobOptions(generators=["llm", "llm_codegen"]),
                         llm_settings=LLMSettings.from_env(server.env()))
        executor, codegen = make_generator("llm"), make_generator("llm_codegen")
        ctx.attach(executor)
        ctx.attach(codegen)
        try:
            codegen.propose(group_target(cpu), [], [], 1)
            codegen.propose(group_target(cpu), [], [], 1)
        finally:
            ctx.close()
    assert executor.session is codegen.session and executor.usage() == codegen.usage()
    assert [t["call"] for t in records(tmp_path / "transcripts.jsonl")] == [1, 2]


@pytest.mark.parametrize("path", sorted(H200.iterdir()), ids=lambda p: p.name)
def test_every_h200_group_is_described_with_its_call_kernels_and_params(path):
    """GEMM and convolution groups alike, bias_addmm's stride-0 bias too: the request names the real library
    call, every kernel of the group with its source, and every parameter."""
    target = group_target(path)
    group, epilogue = target.group, target.group["kernels"][1:]
    with ScriptedLLM(["no code"]) as server:
        CodegenGenerator(LLMSettings.from_env(server.env())).propose(target, [], [], 1)
    text = user_text(server.requests[0])
    assert group["body"][group["anchor_in_body"]] in text and f"aten `{group['op']}`" in text
    assert set(group["kernel_sources"]) == set(epilogue)  # 22_matmul_large_k: the mm alone, no epilogue
    assert all(f"### `{k}`" in text and group["kernel_sources"][k][-200:] in text for k in epilogue)
    assert all(f"`{p}` ({role}" in text for p, role in zip(group["params"], group["arg_names"], strict=True))
