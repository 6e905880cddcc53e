"""The `llm` generator against a real scripted OpenAI-compatible server (tests/llm_server.py), no GPU."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelopt.agents.generator import LLMGenerator, extract_code
from kernelopt.agents.llm import LLMClient, LLMError, LLMSettings
from kernelopt.pipeline.job import run_job
from kernelopt.pipeline.options import JobOptions
from kernelopt.search.generator import KernelTarget
from tests.conftest import HAS_CUDA
from tests.llm_server import ScriptedLLM, fenced, plan, tokens

REPO = Path(__file__).resolve().parent.parent
KERNEL = REPO / "benchmarks" / "kernels" / "add_relu_kernel.py"
SOURCE = KERNEL.read_text()
GOOD = SOURCE.replace("BLOCK_SIZE=1024", "BLOCK_SIZE=512")  # a correct variant
BROKEN = SOURCE.replace("tl.maximum(v, 0.0)", "tl.no_such_function(v, 0.0)")  # fails at Gate 1
WRONG = SOURCE.replace("tl.maximum(v, 0.0)", "tl.maximum(v, 1.0)")  # wrong numerics: fails at Gate 2
# Kernels that cheat (issue 10): each must be stopped by a gate, with feedback that names it.
_LAUNCH = "    add_relu_kernel[grid](x, y, out, n, BLOCK_SIZE=1024, num_warps=4)"
SIDE_STREAM = SOURCE.replace(_LAUNCH, "    side = torch.cuda.Stream()  # off the stream Gate 4 times\n"
                             "    with torch.cuda.stream(side):\n    " + _LAUNCH)
STALE = SOURCE.replace("def launch(x, y):\n    out = torch.empty_like(x)",  # the first call's output, forever
                       "_CACHE = {}\n\n\ndef launch(x, y):\n    if 'out' in _CACHE:\n        return _CACHE['out']\n"
                       "    out = _CACHE['out'] = torch.empty_like(x)")
WRITES_INPUT = SOURCE.replace("    out = torch.empty_like(x)", "    out = x  # the result overwrites an input")
assert len({SOURCE, GOOD, BROKEN, WRONG, SIDE_STREAM, STALE, WRITES_INPUT}) == 7

needs_interpreter = pytest.mark.skipif(HAS_CUDA, reason="the kernel jobs here run on the Triton interpreter")


def settings(server: ScriptedLLM, **kw) -> LLMSettings:
    return LLMSettings.from_env({**server.env(), **{k: str(v) for k, v in kw.items()}})


def user_text(request: dict) -> str:
    return "\n".join(m["content"] for m in request["body"]["messages"] if m["role"] == "user")


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# --- the client ---------------------------------------------------------------------------------------------

def test_settings_from_env_fall_back_to_openai_names_and_say_what_is_missing():
    s = LLMSettings.from_env({"OPENAI_BASE_URL": "http://h/v1", "OPENAI_API_KEY": "k", "KERNELOPT_LLM_MODEL": "m",
                              "KERNELOPT_LLM_MAX_TOKENS": "100", "KERNELOPT_LLM_TEMPERATURE": "0.5"})
    assert (s.base_url, s.api_key, s.model, s.max_tokens, s.temperature) == ("http://h/v1", "k", "m", 100, 0.5)
    assert s.unconfigured() is None and s.public()["api_key"] == "set"
    assert "KERNELOPT_LLM_MODEL" in LLMSettings.from_env({"OPENAI_API_KEY": "k"}).unconfigured()
    assert "endpoint" in LLMSettings.from_env({"KERNELOPT_LLM_MODEL": "m"}).unconfigured()
    target = KernelTarget("k", SOURCE, "kernel-file", [], {}, [])
    assert "KERNELOPT_LLM_MODEL" in LLMGenerator(LLMSettings()).applicable(target)


def test_429_then_success_is_retried_and_counted(tmp_path):
    with ScriptedLLM([{"status": 429, "retry_after": 0}, {"status": 503}, "hello"]) as server:
        client = LLMClient(settings(server), tmp_path / "transcripts.jsonl")
        reply = client.chat([{"role": "user", "content": "say hello"}], meta={"x": 1})
    assert reply.content == "hello" and reply.attempts == 3 and len(server.requests) == 3
    assert server.requests[0]["body"]["model"] == "scripted-model"
    assert server.requests[0]["body"]["max_tokens"] == 8192
    assert (reply.prompt_tokens, reply.completion_tokens) == (tokens("say hello"), tokens("hello"))
    assert client.usage.to_dict() == {"calls": 1, "failed_calls": 0, "prompt_tokens": tokens("say hello"),
                                      "completion_tokens": tokens("hello"), "cost": None,
                                      "total_tokens": tokens("say hello") + tokens("hello")}
    (rec,) = records(tmp_path / "transcripts.jsonl")
    assert rec["reply"] == "hello" and rec["attempts"] == 3 and rec["meta"] == {"x": 1}
    assert rec["messages"] == [{"role": "user", "content": "say hello"}]
    assert "429" in rec["retried_errors"][0] and "503" in rec["retried_errors"][1]


def test_retries_run_out_and_a_4xx_is_not_retried(tmp_path):
    with ScriptedLLM([{"status": 500}]) as server:
        client = LLMClient(settings(server, KERNELOPT_LLM_MAX_RETRIES=2), tmp_path / "t.jsonl")
        with pytest.raises(LLMError) as err:
            client.chat([{"role": "user", "content": "x"}])
        assert err.value.kind == "http" and len(server.requests) == 3
    with ScriptedLLM([{"status": 400, "message": "bad model"}]) as server:
        with pytest.raises(LLMError, match="bad model"):
            LLMClient(settings(server), None).chat([{"role": "user", "content": "x"}])
        assert len(server.requests) == 1
    assert client.usage.failed_calls == 1 and records(tmp_path / "t.jsonl")[0]["error"].startswith("http")


def test_a_reply_that_never_finishes_times_out(tmp_path):
    with ScriptedLLM([{"hang": 60}]) as server:
        client = LLMClient(settings(server, KERNELOPT_LLM_TIMEOUT_S=1), tmp_path / "t.jsonl")
        t0 = time.monotonic()
        with pytest.raises(LLMError) as err:
            client.chat([{"role": "user", "content": "x"}])
        assert err.value.kind == "timeout" and time.monotonic() - t0 < 10
        assert len(server.requests) == 1  # a timeout is not retried
    assert records(tmp_path / "t.jsonl")[0]["error"].startswith("timeout")


def test_prices_give_a_cost(tmp_path):
    with ScriptedLLM(["x" * 400]) as server:
        client = LLMClient(settings(server, KERNELOPT_LLM_PRICE_IN=1.0, KERNELOPT_LLM_PRICE_OUT=10.0), None)
        client.chat([{"role": "user", "content": "y" * 4000}])
    assert client.usage.cost == pytest.approx((1000 * 1.0 + 100 * 10.0) / 1e6)


# --- reply parsing ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("reply,reason", [
    ("", "empty"),
    ("I would use a larger block size.", "prose only"),
    ("```cuda\n__global__ void f() {}\n```", "no python code block"),
    (fenced("a = 1") + fenced("b = 2"), "2 python code blocks"),
    ("```python\n\n```", "empty"),
])
def test_malformed_replies_give_no_code_and_a_reason(reply, reason):
    code, why = extract_code(reply)
    assert code is None and reason in why


def test_one_python_block_is_the_candidate():
    code, prose = extract_code("Smaller blocks.\n```python\nx = {'a': 1}\n```\n```text\nnot code\n```")
    assert code == "x = {'a': 1}\n" and prose == "Smaller blocks."
    assert extract_code("```\nx = 1\n```")[0] == "x = 1\n"


# --- kernel jobs on the Triton interpreter ------------------------------------------------------------------

def _job(tmp_path, monkeypatch, server, problem: Path = KERNEL, **options):
    for k, v in server.env(**options.pop("env", {})).items():
        monkeypatch.setenv(k, v)
    opts = JobOptions(**{"generators": ["llm"], "time_budget_s": 600, **options})
    result = run_job(str(problem), tmp_path / "run", opts)
    return result, tmp_path / "run"


@needs_interpreter
def test_gate_failures_go_back_into_the_conversation(tmp_path, monkeypatch):
    script = ["I would make the block smaller.", fenced(BROKEN), fenced(GOOD, "Use 512-element blocks.")]
    with ScriptedLLM(script) as server:
        result, run = _job(tmp_path, monkeypatch, server, iterations=3)
    assert len(server.requests) == 3, (result.outcome, result.cause)
    first, second, third = server.requests
    assert SOURCE in user_text(first)  # the kernel's source, in full
    assert "prose only" in user_text(second) and "rejected at extract" in user_text(second)
    assert "rejected at gate1" in user_text(third) and "no_such_function" in user_text(third)
    # one conversation: the earlier replies are in the later requests
    assert [m["role"] for m in third["body"]["messages"]] == ["system", "user", "assistant", "user", "assistant",
                                                              "user"]
    traj = records(run / "trajectory.jsonl")
    assert [(t["generator"], t["gate"], t["passed"]) for t in traj] == [
        ("llm", "extract", False), ("llm", "gate1", False), ("llm", "timed", True)]
    # call 1 was the planner's (one plan; its K = 4 retries carried the executor through calls 2-4)
    assert traj[2]["plan"] == "Use 512-element blocks." and traj[2]["params"]["call"] == 4
    assert len(server.planner_requests) == 1 and {t["params"]["plan_call"] for t in traj} == {1}
    # the best candidate passed Gate 3 on the interpreter; without a GPU the original is kept
    assert result.outcome == "fallback" and result.cause.startswith("no-gpu"), result.cause
    report = json.loads((run / "report.json").read_text())
    transcripts = records(run / "transcripts.jsonl")
    assert [(t["call"], t["agent"]) for t in transcripts] == [(1, "planner"), (2, "executor"), (3, "executor"),
                                                              (4, "executor")]
    assert transcripts[3]["reply"] == script[2] and "transcripts.jsonl" in result.artifacts
    assert report["llm"]["calls"] == 4 and report["llm"]["prompt_tokens"] == sum(
        tokens("".join(m["content"] for m in r["body"]["messages"])) for r in server.all_requests)
    assert report["llm"]["completion_tokens"] == sum(tokens(s) for s in script) + tokens(plan())
    assert report["llm"]["prompt_tokens"] == sum(t["prompt_tokens"] for t in transcripts)
    assert report["llm"]["agents"]["executor"]["calls"] == 3 and report["llm"]["agents"]["planner"]["calls"] == 1


@needs_interpreter
def test_every_reply_wrong_ends_with_the_original_kernel(tmp_path, monkeypatch):
    with ScriptedLLM([fenced(WRONG), fenced(BROKEN)]) as server:
        result, run = _job(tmp_path, monkeypatch, server, iterations=2)
    assert "rejected at gate2" in user_text(server.requests[1])
    assert [t["gate"] for t in records(run / "trajectory.jsonl")] == ["gate2", "gate1"]
    assert result.outcome == "fallback" and result.cause.startswith("no-faster-candidate"), result.cause
    assert (run / "optimized_module.py").read_text() == SOURCE


@needs_interpreter
def test_cheating_kernels_are_stopped_by_the_gates_that_catch_them(tmp_path, monkeypatch):
    """A side stream (hides work from Gate 4's timing), a stale cached output, an overwritten
    input: refused before running, failed on a later seed, failed for the modified input."""
    with ScriptedLLM([fenced(SIDE_STREAM), fenced(STALE), fenced(WRITES_INPUT)]) as server:
        result, run = _job(tmp_path, monkeypatch, server, iterations=3)
    traj = records(run / "trajectory.jsonl")
    assert [(t["gate"], t["passed"]) for t in traj] == [("gate1", False), ("gate2", False), ("gate2", False)]
    assert "CUDA stream" in traj[0]["feedback"] and "torch.cuda.Stream" in traj[0]["feedback"]
    assert traj[1]["metrics"].get("failed_seed", 0) > 0  # right once, then the same answer for new inputs
    assert "input" in traj[2]["feedback"]
    assert "rejected at gate1" in user_text(server.requests[1]) and "CUDA stream" in user_text(server.requests[1])
    assert result.outcome == "fallback" and result.cause.startswith("no-faster-candidate"), result.cause
    assert (run / "optimized_module.py").read_text() == SOURCE


@needs_interpreter
def test_a_hanging_endpoint_times_out_and_the_job_still_ends(tmp_path, monkeypatch):
    with ScriptedLLM([{"hang": 120}]) as server:
        t0 = time.monotonic()
        result, run = _job(tmp_path, monkeypatch, server, iterations=5,
                           env={"KERNELOPT_LLM_TIMEOUT_S": "1", "KERNELOPT_LLM_MAX_RETRIES": "0"})
        assert time.monotonic() - t0 < 120
    assert len(server.requests) == 2, (result.outcome, result.cause)  # two failed calls retire the chain
    assert result.outcome == "fallback" and result.cause.startswith("no-faster-candidate"), result.cause
    report = json.loads((run / "report.json").read_text())
    assert report["llm"]["failed_calls"] == 2 and "timeout" in report["search"][0]["notes"][0]
    assert [t["error"].split(":")[0] for t in records(run / "transcripts.jsonl") if t["agent"] == "executor"] == [
        "timeout", "timeout"]


@needs_interpreter
def test_optimize_cli_with_generators_llm_sends_the_kernel_and_records_each_reply(tmp_path):
    with ScriptedLLM([fenced(GOOD)]) as server:
        env = dict(os.environ, PYTHONUNBUFFERED="1", **server.env())
        env.pop("TRITON_INTERPRET", None)
        proc = subprocess.run([sys.executable, "-m", "kernelopt.cli.main", "optimize", str(KERNEL), "--generators", "llm",
                               "--workdir", str(tmp_path / "run")], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "search over the kernel file (llm)" in proc.stdout
    assert server.requests and all(r["body"]["model"] == "scripted-model" for r in server.requests)
    assert SOURCE in user_text(server.requests[0])
    traj = records(tmp_path / "run" / "trajectory.jsonl")
    assert traj[0]["generator"] == "llm" and traj[0]["passed"] and traj[0]["gate"] == "timed"
    transcripts = records(tmp_path / "run" / "transcripts.jsonl")
    assert len(transcripts) == len(server.all_requests)
    assert [t for t in transcripts if t["agent"] == "executor"][0]["reply"] == fenced(GOOD)
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert "transcripts.jsonl" in report["result"]["artifacts"]
    assert report["llm"]["calls"] == len(server.all_requests)


def test_unknown_generators_are_refused():
    with pytest.raises(ValueError, match="unknown generators"):
        JobOptions(generators=["llm", "nope"])


def test_a_cancelled_job_abandons_a_call_within_seconds(tmp_path):
    cancel_at = time.monotonic() + 1.0
    with ScriptedLLM([{"hang": 60}]) as server:
        client = LLMClient(settings(server), tmp_path / "t.jsonl", should_cancel=lambda: time.monotonic() > cancel_at)
        t0 = time.monotonic()
        with pytest.raises(LLMError) as err:
            client.chat([{"role": "user", "content": "x"}])
    assert err.value.kind == "cancelled" and time.monotonic() - t0 < 5
    assert records(tmp_path / "t.jsonl")[0]["error"].startswith("cancelled")


def test_the_engine_imports_without_openai_and_children_get_no_llm_settings():
    code = ("import sys; sys.modules['openai'] = None\n"  # an import of openai would now fail
            "import kernelopt.agents.generator, kernelopt.agents.llm, kernelopt.search.registry\n"
            "import kernelopt.pipeline.kernel_job, kernelopt.pipeline.model_job\n"
            "from kernelopt.agents.llm import LLMClient, LLMError, LLMSettings\n"
            "s = LLMSettings(base_url='http://127.0.0.1:9/v1', model='m')\n"
            "try:\n    LLMClient(s).chat([{'role': 'user', 'content': 'x'}])\n"
            "except LLMError as e:\n    assert e.kind == 'config' and 'pip install' in str(e), e\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    from kernelopt.isolation.sandbox import allowed

    assert not any(allowed(n) for n in ("KERNELOPT_LLM_API_KEY", "KERNELOPT_LLM_BASE_URL", "OPENAI_API_KEY"))


def test_optimize_with_an_unknown_generator_is_one_line_and_creates_nothing(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "kernelopt.cli.main", "optimize", str(KERNEL), "--generators", "llm,nope",
                           "--workdir", str(tmp_path / "run")], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "--generators: unknown generator(s) 'nope'" in proc.stderr and not (tmp_path / "run").exists()


def test_an_inductor_kernel_is_sent_as_the_standalone_module_a_candidate_must_be():
    from tests.test_launch_config import make_target

    target = make_target("pointwise_gelu_scale")
    fn_text = target.source[target.source.index("@triton.jit"):].strip()
    echo = lambda body: fenced(body["messages"][1]["content"].split("```python\n")[1].split("```")[0]  # noqa: E731
                               .replace("num_warps=4", "num_warps=8"))
    with ScriptedLLM([echo]) as server:
        gen = LLMGenerator(settings(server))
        assert gen.applicable(target) is None
        (cand,) = gen.propose(target, [], [], 4)
    sent = user_text(server.requests[0])
    assert "def run(*args, stream=None):" in sent and fn_text in sent and "triton_heuristics" not in sent
    assert "XBLOCK=1024, num_warps=4" in sent and "XBLOCK=1024, num_warps=8" in cand.source
    assert cand.rejected is None and cand.generator == "llm" and gen.usage()["calls"] == 2  # a plan, a candidate


# --- a model job on a GPU, driven by the scripted server ------------------------------------------------------

SOFTMAX_ROWS = REPO / "tests" / "testdata" / "problems" / "softmax_rows.py"


def _module_sent(body: dict) -> str:
    """The module the executor's first message asked the scripted 'LLM' to improve."""
    first = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return first.split("```python\n")[1].split("```")[0]


def _retune(body: dict) -> str:
    """A scripted 'LLM' that sends back the module it was given with another num_warps (a correct candidate)."""
    import re

    module = _module_sent(body)
    asked = sum(m["role"] == "user" for m in body["messages"])
    current = int(re.search(r"num_warps=(\d+)", module).group(1))
    warps = [w for w in (1, 2, 4, 8, 16) if w != current][(asked - 1) % 4]
    return fenced(re.sub(r"num_warps=\d+", f"num_warps={warps}", module), f"Try num_warps={warps}.")


@pytest.mark.gpu
def test_model_job_on_gpu_driven_by_the_scripted_server(tmp_path, monkeypatch):
    # a problem whose kernel the strategy searches (layer_norm runs at the memory roofline on an H200:
    # the job skips it as near-optimal and asks the LLM nothing; seen on the GPU)
    with ScriptedLLM([_retune]) as server:
        result, run = _job(tmp_path, monkeypatch, server, SOFTMAX_ROWS, iterations=3)
    assert result.outcome in ("optimized", "matched", "fallback"), (result.cause, result.error)
    assert server.requests, ("the job asked the LLM nothing", result.outcome, result.cause)
    assert "def run(*args, stream=None):" in user_text(server.requests[0])
    traj = [t for t in records(run / "trajectory.jsonl") if t["generator"] == "llm"]
    assert len(traj) == len(server.requests)
    passed = [t for t in traj if t["passed"]]
    assert passed and all(t["gate"] == "timed" and t["kernel_ms"] for t in passed), traj
    assert "transcripts.jsonl" in result.artifacts
    report = json.loads((run / "report.json").read_text())
    assert report["llm"]["calls"] == len(server.all_requests) and report["llm"]["prompt_tokens"] > 0
    print("outcome", result.outcome, result.cause, [(t["plan"], t["gate"], t["kernel_ms"]) for t in traj])
    if result.outcome == "optimized":
        from kernelopt.pipeline.check import CheckRequest, run_check

        assert run_check(CheckRequest(str(run / "optimized_module.py"), str(SOFTMAX_ROWS)))["passed"]


def _launch_once(module: str, params: str, args: str) -> str:
    """A cheat made of a correct module: its `run(<params>)` renamed `_launch`, and a `run` that calls it on the
    first call only, so every later call leaves the first call's output in the buffer ('reads stale output')."""
    signature = f"def run({params}):"
    assert signature in module
    return module.replace(signature, f"def _launch({params}):") + (
        f"\n\n_CALLS = [0]\n\n\n{signature}\n    _CALLS[0] += 1\n"
        "    if _CALLS[0] == 1:  # later calls: the first call's output is returned as it stands\n"
        f"        _launch({args})\n")


def _stale(body: dict) -> str:
    """A scripted 'LLM' that cheats with the module it was given (_launch_once)."""
    return fenced(_launch_once(_module_sent(body), "*args, stream=None", "*args, stream=stream"),
                  "Cache the result after the first launch.")


def _assert_cheat_caught_at_gate2(result, run: Path, generator: str, server: ScriptedLLM) -> list[dict]:
    """Gate 2 poisons the outputs before every seed: an unlaunched kernel leaves the poison (or an old answer);
    the same cheat sent again is a duplicate, never run again. The job keeps the compiler's code."""
    traj = [t for t in records(run / "trajectory.jsonl") if t["generator"] == generator]
    assert server.requests and traj, ("the job asked the LLM nothing", result.outcome, result.cause)
    gates = [(t["gate"], t["passed"]) for t in traj]
    assert gates[0] == ("gate2", False) and set(gates[1:]) <= {("gate2", False), ("duplicate", False)}, \
        [(t["gate"], t["feedback"]) for t in traj]
    assert result.outcome == "fallback" and result.cause.startswith("no-faster-candidate"), result.cause
    assert "transcripts.jsonl" in result.artifacts
    return traj


@pytest.mark.gpu
def test_model_job_with_a_cheating_llm_kernel_ends_fallback_with_the_gate_that_caught_it(tmp_path, monkeypatch):
    with ScriptedLLM([_stale]) as server:
        result, run = _job(tmp_path, monkeypatch, server, SOFTMAX_ROWS, iterations=2)
    traj = _assert_cheat_caught_at_gate2(result, run, "llm", server)
    report = json.loads((run / "report.json").read_text())
    assert report["llm"]["calls"] == len(server.all_requests)
    print("cheating kernel:", result.outcome, result.cause, [(t["gate"], t["feedback"][:120]) for t in traj])


LINEAR_BIAS_GELU = REPO / "benchmarks" / "problems" / "level2" / "01_linear_bias_gelu.py"


def _group_interface(body: dict) -> tuple[list[str], dict[str, tuple[str, list[int]]]]:
    """`run`'s parameters and, per parameter, its role and shape, from the codegen request's interface text."""
    import re

    first = next(m["content"] for m in body["messages"] if m["role"] == "user")
    params = [p.strip() for p in re.search(r"defining `run\(([^)]*)\)`", first).group(1).split(",")]
    roles = {name: (role, [int(d) for d in dims.split(",")]) for name, role, dims in
             re.findall(r"^- `(\w+)` \((\w+?)\d*, .*?: float32, shape \[([\d, ]+)\]", first, re.M)}
    return [p for p in params if p != "stream=None"], roles


def _tf32_linear_bias_gelu(body: dict) -> str:
    """A scripted 'LLM' reply for level2/01's group (mm, then bias + bias + GELU): cuBLAS in TF32 for the GEMM,
    the epilogue in torch, every output written in place. Valid for any shapes of that group; plain TF32, so
    the job's policy must be `tf32` (under `strict` Gate 3 rejects it, tests/test_agents_codegen.py)."""
    params, roles = _group_interface(body)
    (out,) = [p for p in params if roles[p][0] == "out_ptr"]
    n = roles[out][1][1]
    mats = [p for p in params if roles[p][0] == "in_ptr" and len(roles[p][1]) == 2]
    (w,) = [p for p in mats if roles[p][1][0] == n]
    (x,) = [p for p in mats if p != w]
    biases = [p for p in params if roles[p][0] == "in_ptr" and roles[p][1] == [n]]
    adds = "".join(f".add_({b})" for b in biases)
    module = f"""import torch
import torch.nn.functional as F

KERNELOPT_PRECISION = "tf32"


def run({", ".join(params)}, stream=None):
    matmul = torch.backends.cuda.matmul
    kept, matmul.allow_tf32 = matmul.allow_tf32, True  # TF32 for this GEMM only
    try:
        torch.mm({x}, {w}.t(), out={out})
    finally:
        matmul.allow_tf32 = kept
    {out}{adds}
    {out}.copy_(F.gelu({out}))
"""
    return fenced(module, "STRATEGY: algorithmic-rewrite\nThe GEMM on TF32 tensor cores, the epilogue after it.")


@pytest.mark.gpu
def test_model_job_on_gpu_ends_optimized_by_a_scripted_codegen_reply_under_tf32(tmp_path, monkeypatch):
    # a fused chain (cuBLAS mm + Inductor's bias/GELU epilogue) rewritten by the codegen agent, through all
    # four gates: a TF32 GEMM against the baseline's IEEE-fp32 cuBLAS, admitted by the tf32 bound alone
    with ScriptedLLM([_tf32_linear_bias_gelu]) as server:
        result, run = _job(tmp_path, monkeypatch, server, LINEAR_BIAS_GELU, generators=["llm_codegen"],
                           precision="tf32", iterations=1)
    assert server.requests, ("the job asked the LLM nothing", result.outcome, result.cause)
    traj = [t for t in records(run / "trajectory.jsonl") if t["generator"] == "llm_codegen"]
    assert traj and traj[0]["passed"] and traj[0]["gate"] == "timed", traj
    assert result.outcome == "optimized", (result.cause, result.error)
    assert result.speedup >= 1.03 and result.precision == "tf32" and result.reduced_precision, result
    report = json.loads((run / "report.json").read_text())
    assert report["llm"]["calls"] == len(server.all_requests) and report["llm"]["prompt_tokens"] > 0
    assert report["deployed_reduced_precision"], "the deployed TF32 GEMM is stated"
    assert "transcripts.jsonl" in result.artifacts and "optimized_module.py" in result.artifacts
    from kernelopt.pipeline.check import CheckRequest, run_check

    assert run_check(CheckRequest(str(run / "optimized_module.py"), str(LINEAR_BIAS_GELU),
                                  precision="tf32"))["passed"]
    print("codegen tf32:", result.speedup, result.cause, report["deployed_reduced_precision"])


def _stale_linear_bias_gelu(body: dict) -> str:
    """The reply of _tf32_linear_bias_gelu, made a cheat (_launch_once)."""
    params, _ = _group_interface(body)
    module, _ = extract_code(_tf32_linear_bias_gelu(body))
    return fenced(_launch_once(module, ", ".join(params + ["stream=None"]), ", ".join(params)),
                  "STRATEGY: algorithmic-rewrite\nCompute once, then reuse the result.")


@pytest.mark.gpu
def test_the_same_codegen_job_with_a_cheating_reply_ends_fallback_caught_at_gate2(tmp_path, monkeypatch):
    with ScriptedLLM([_stale_linear_bias_gelu]) as server:
        result, run = _job(tmp_path, monkeypatch, server, LINEAR_BIAS_GELU, generators=["llm_codegen"],
                           precision="tf32", iterations=1)
    traj = _assert_cheat_caught_at_gate2(result, run, "llm_codegen", server)
    print("cheating codegen:", result.cause, [(t["gate"], t["feedback"][:120]) for t in traj])


CONV_BN_RELU = REPO / "benchmarks" / "problems" / "level2" / "03_conv_bn_relu.py"


def _batch_norm_chain(body: dict) -> str:
    """A scripted 'LLM' reply for level2/03's kernel chain (Inductor's two-pass training-mode batch norm and
    ReLU after cuDNN's convolution, four Triton kernels): the chain in torch, every output written in place.
    Parameters by role, as the fusion request states them: the convolution's output (the 4-D input), its
    bias, the running mean and variance (read and updated in place), the norm's weight and bias, the output."""
    params, roles = _group_interface(body)
    (x,) = [p for p in params if roles[p][0] == "in_ptr" and len(roles[p][1]) == 4]
    conv_b, weight, bias = [p for p in params if roles[p][0] == "in_ptr" and len(roles[p][1]) == 1]
    running_mean, running_var = [p for p in params if roles[p][0] == "in_out_ptr"]
    (out,) = [p for p in params if roles[p][0] == "out_ptr"]
    module = f"""import torch

KERNELOPT_PRECISION = "fp32"


def run({", ".join(params)}, stream=None):
    c = (1, -1, 1, 1)
    y = {x} + {conv_b}.view(c)
    n = y.numel() // y.shape[1]
    var, mean = torch.var_mean(y, dim=(0, 2, 3), unbiased=False)
    {running_mean}.mul_(0.9).add_(mean, alpha=0.1)
    {running_var}.mul_(0.9).add_(var * (n / (n - 1)), alpha=0.1)
    {out}.copy_(torch.relu((y - mean.view(c)) * torch.rsqrt(var.view(c) + 1e-5) * {weight}.view(c) + {bias}.view(c)))
"""
    return fenced(module, "STRATEGY: operation-fusion\nStatistics in one pass, then normalize and ReLU.")


@pytest.mark.gpu
def test_model_job_on_gpu_with_the_fusion_agent_gates_a_fused_batch_norm_chain(tmp_path, monkeypatch):
    # the kernel chain found on the H200 capture (tests/test_kernel_chains.py), searched by llm_fusion alone:
    # the scripted module must pass Gates 1-2 against Inductor's four kernels on the real captured inputs,
    # running-statistics updates included, and be timed; the job ends with an outcome, never an error
    with ScriptedLLM([_batch_norm_chain]) as server:
        result, run = _job(tmp_path, monkeypatch, server, CONV_BN_RELU, generators=["llm_fusion"], iterations=1)
    assert server.requests, ("the job asked the LLM nothing", result.outcome, result.cause)
    assert "Fuse this kernel chain (_kernelopt_group_chain_" in user_text(server.requests[0])
    traj = [t for t in records(run / "trajectory.jsonl") if t["generator"] == "llm_fusion"]
    assert traj and traj[0]["passed"] and traj[0]["gate"] == "timed" and traj[0]["kernel_ms"], traj
    assert result.outcome in ("optimized", "matched", "fallback") and not result.error, (result.cause, result.error)
    report = json.loads((run / "report.json").read_text())
    (chain,) = report["graph"]["kernel_chains"]
    assert len(chain["kernels"]) == 4
    assert any(t["name"] == chain["name"] and t["searched"] for t in report["targets"])
    assert "transcripts.jsonl" in result.artifacts
    print("fusion:", result.outcome, result.cause, [(t["gate"], t["kernel_ms"], t.get("baseline_kernel_ms"))
                                                     for t in traj])
    if result.outcome == "optimized":
        from kernelopt.pipeline.check import CheckRequest, run_check

        assert run_check(CheckRequest(str(run / "optimized_module.py"), str(CONV_BN_RELU)))["passed"]


@needs_interpreter
def test_llm_and_launch_config_search_side_by_side_on_a_kernel_file(tmp_path, monkeypatch):
    with ScriptedLLM([fenced(GOOD)]) as server:
        result, run = _job(tmp_path, monkeypatch, server, iterations=1, generators=["llm", "launch_config"])
    traj = records(run / "trajectory.jsonl")
    by_gen = {g: [t for t in traj if t["generator"] == g] for g in ("llm", "kernel_file_config")}
    assert len(by_gen["llm"]) == 1 and by_gen["llm"][0]["passed"] and len(server.requests) == 1
    # N = 4 plans over two chains: launch_config proposed BLOCK_SIZE=256 and 512, but 512 is the LLM's
    # candidate (the same source), which is never gated twice
    assert [t["plan"] for t in by_gen["kernel_file_config"]] == ["BLOCK_SIZE=256 num_warps=4"]
    assert result.outcome == "fallback" and result.cause.startswith("no-gpu"), result.cause
