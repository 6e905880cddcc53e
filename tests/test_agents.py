"""The agent loop (planner, executor, summarizer, memory) against the scripted OpenAI-compatible server.

Kernel-file jobs run on the Triton interpreter (Gates 1-2 for real; no speed). The
search-level tests use test_beam's evaluator: real Gates 1-2 on the interpreter and a
deterministic stand-in latency (interpreter time says nothing about a GPU).
"""
from __future__ import annotations

import json
from pathlib import Path

from kernelopt.agents.generator import LLMGenerator
from kernelopt.agents.llm import LLMSettings
from kernelopt.agents.memory import ExperienceMemory, summarize
from kernelopt.agents.planner import STRATEGIES, parse_plan
from kernelopt.pipeline.job import run_job
from kernelopt.pipeline.options import JobOptions
from kernelopt.search.beam import SearchConfig, search_kernel
from kernelopt.search.fingerprint import fingerprint
from kernelopt.search.generator import Attempt, Candidate, Gate
from kernelopt.search.kernel_source import standalone_module
from tests.llm_server import ScriptedLLM, fenced, is_planner, plan, tokens
from tests.test_beam import InterpreterEvaluator, small_reduction
from tests.test_llm import BROKEN, KERNEL, WRONG, needs_interpreter

REPO = Path(__file__).resolve().parent.parent


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def user_text(request: dict) -> str:
    return "\n".join(m["content"] for m in request["body"]["messages"] if m["role"] == "user")


def job(tmp_path, monkeypatch, server, avoid=None, **options):
    for k, v in server.env().items():
        monkeypatch.setenv(k, v)
    opts = JobOptions(**{"generators": ["llm"], "time_budget_s": 600, **options})
    return run_job(str(KERNEL), tmp_path / "run", opts, avoid=avoid), tmp_path / "run"


# --- units ------------------------------------------------------------------------------------------------

def test_fingerprint_ignores_comments_layout_docstrings_and_local_names_but_not_parameters():
    a = "def f(x, BLOCK=4):\n    '''doc'''\n    acc = x + 1  # one\n    return acc * BLOCK\n"
    b = "def f(x, BLOCK=4):\n\n    total = (x+1)\n    return total*BLOCK   # renamed local, other layout\n"
    c = "def f(x, WIDTH=4):\n    acc = x + 1\n    return acc * WIDTH\n"  # a parameter is part of the interface
    d = "def f(x, BLOCK=4):\n    acc = x + 2\n    return acc * BLOCK\n"
    assert fingerprint(a) == fingerprint(b)
    assert len({fingerprint(a), fingerprint(c), fingerprint(d)}) == 3
    assert fingerprint("def broken(:\n  pass # x") == fingerprint("def broken(:  pass")  # no parse: tokens
    # a name bound by `except ... as` is never renamed, so these two different programs stay apart
    e1 = "def f(x):\n    e = 1\n    try:\n        x()\n    except ValueError as e:\n        return e\n"
    e2 = "def f(x):\n    b = 1\n    try:\n        x()\n    except ValueError as e:\n        return b\n"
    assert fingerprint(e1) != fingerprint(e2)


def test_planner_replies_are_parsed_into_a_known_strategy_label():
    assert parse_plan("STRATEGY: Block sizes\nPLAN: Use 512-wide blocks.\nThen measure.") == (
        "block-sizes", "Use 512-wide blocks. Then measure.")
    assert parse_plan("**Strategy**: vectorized-access (wider loads)\nPLAN: x")[0] == "vectorized-access"
    assert parse_plan("I would tile the loop.") == ("other", "I would tile the loop.")
    assert "other" in STRATEGIES


def test_summarizer_items_are_deterministic_and_the_queue_keeps_what_teaches():
    def att(i, passed, gate, ms=None, strategy="block-sizes"):
        cand = Candidate("k", f"x = {i}", "llm", f"plan {i}", params={"strategy": strategy, "plan_id": f"p{i // 2}"})
        return Attempt(cand, passed, gate, "TypeError: bad\nmore", kernel_ms=ms, baseline_kernel_ms=1.0)

    fast, slow, neutral, failed = att(0, True, Gate.TIMED, 0.5), att(1, True, Gate.TIMED, 1.5), \
        att(2, True, Gate.TIMED, 0.99), att(3, False, Gate.GATE1)
    assert summarize("k", fast) == summarize("k", fast)
    assert [summarize("k", a).outcome for a in (fast, slow, neutral, failed)] == [
        "success", "slowdown", "neutral", "failed"]
    assert summarize("k", fast).speedup == 2.0 and "2.00x faster" in summarize("k", fast).lesson
    assert "rejected at gate1: TypeError: bad more" in summarize("k", failed).lesson
    memory = ExperienceMemory(size=2)
    for a in (fast, slow, neutral, failed):
        memory.add("k", a)
    assert [i.outcome for i in memory.recent("k")] == ["slowdown", "failed"]  # Q = 2, neutral not kept
    # plans p0 (fast + slow: a success) and p1 (neutral + failed): one attempt each of block-sizes
    assert memory.strategy_outcomes() == [{"strategy": "block-sizes", "attempts": 2, "successes": 1}]


# --- jobs on the interpreter ---------------------------------------------------------------------------------

@needs_interpreter
def test_memory_of_failed_plans_reaches_the_next_plan_and_is_an_artifact(tmp_path, monkeypatch):
    planner = [plan("block-sizes", "Halve the block."), plan("vectorized-access", "Load two at a time.")]
    with ScriptedLLM([fenced(BROKEN), fenced(WRONG)], planner=planner) as server:
        # K = 0: a rejected candidate ends its plan, so each iteration asks the planner again
        result, run = job(tmp_path, monkeypatch, server, iterations=2, executor_retries=0)
    assert len(server.planner_requests) == 2 and len(server.requests) == 2, (result.outcome, result.cause)
    first, second = (user_text(r) for r in server.planner_requests)
    assert "Nothing has been tried on this kernel yet." in first and "tl.maximum(v, 0.0)" in first
    assert "A standalone kernel file: no library calls around it." in first
    assert "[failed] block-sizes: rejected at gate1" in second and "no_such_function" in second
    assert "Halve the block." in second  # the plan that failed, as the memory states it
    # the executor implements the plan it was given
    assert "Strategy: block-sizes" in user_text(server.requests[0]) and "Halve the block." in user_text(
        server.requests[0])
    assert "Load two at a time." in user_text(server.requests[1])
    items = records(run / "experience.jsonl")
    assert [(i["strategy"], i["outcome"], i["gate"]) for i in items] == [
        ("block-sizes", "failed", "gate1"), ("vectorized-access", "failed", "gate2")]
    assert "experience.jsonl" in result.artifacts
    report = json.loads((run / "report.json").read_text())
    assert report["agents"]["strategy_outcomes"] == [
        {"strategy": "block-sizes", "attempts": 1, "successes": 0},
        {"strategy": "vectorized-access", "attempts": 1, "successes": 0}]
    assert report["agents"]["experience_items"] == 2
    # token accounting: every call of both agents, as the server counted them
    transcripts = records(run / "transcripts.jsonl")
    assert report["llm"]["calls"] == len(server.all_requests) == len(transcripts) == 4
    assert report["llm"]["prompt_tokens"] == sum(
        tokens("".join(m["content"] for m in r["body"]["messages"])) for r in server.all_requests)
    assert report["llm"]["completion_tokens"] == tokens(fenced(BROKEN)) + tokens(fenced(WRONG)) + sum(
        tokens(p) for p in planner)
    by_agent = report["llm"]["agents"]
    assert by_agent["planner"] == {"calls": 2, "prompt_tokens": sum(t["prompt_tokens"] for t in transcripts
                                                                     if t["agent"] == "planner"),
                                   "completion_tokens": sum(tokens(p) for p in planner)}
    assert by_agent["planner"]["prompt_tokens"] + by_agent["executor"]["prompt_tokens"] == report["llm"][
        "prompt_tokens"]


@needs_interpreter
def test_the_avoid_list_is_in_every_planner_prompt_with_its_provenance(tmp_path, monkeypatch):
    avoid = [{"strategy": "block-sizes", "attempts": 4, "successes": 0, "success_rate": 0.0,
              "jobs": ["job-aaa", "job-bbb"]}]
    with ScriptedLLM([fenced(BROKEN)], planner=[plan("block-sizes", "Bigger blocks anyway.")]) as server:
        result, run = job(tmp_path, monkeypatch, server, avoid=avoid, iterations=2, executor_retries=0)
    assert len(server.planner_requests) == 2
    for r in server.planner_requests:
        assert "AVOID block-sizes: 0 of 4 attempts succeeded (jobs job-aaa, job-bbb)" in user_text(r)
    # the planner chose it anyway: on record in the trajectory, and the report repeats the list it was given
    traj = [t for t in records(run / "trajectory.jsonl") if "candidate_id" in t]
    assert traj and all(t["params"]["avoided_strategy"] for t in traj)
    assert json.loads((run / "report.json").read_text())["agents"]["avoid"] == avoid


@needs_interpreter
def test_a_chain_that_keeps_failing_is_stopped_and_the_trajectory_says_so(tmp_path, monkeypatch):
    with ScriptedLLM(["I cannot write code today."]) as server:
        result, run = job(tmp_path, monkeypatch, server, iterations=6, meltdown_failures=3)
    assert len(server.requests) == 3, len(server.requests)  # stopped after 3 failures, not 6 iterations
    traj = records(run / "trajectory.jsonl")
    assert [t["gate"] for t in traj if "candidate_id" in t] == ["extract"] * 3
    stop = traj[-1]
    assert stop == {"event": "chain-stopped", "target": stop["target"], "chain": 0, "generator": "llm",
                    "reason": "meltdown", "iteration": 2, "consecutive_failures": 3}
    report = json.loads((run / "report.json").read_text())
    assert report["search"][0]["stopped_reason"] == "exhausted" and "meltdown" in report["search"][0]["notes"][0]
    assert report["agents"]["stopped_chains"][0]["reason"] == "meltdown"
    assert result.outcome == "fallback" and result.cause.startswith("no-faster-candidate"), result.cause


# --- the search with the LLM generator -------------------------------------------------------------------------

def _variant(xblock: int, warps: int) -> str:
    target = small_reduction()
    cfg = {"kwargs": {"XBLOCK": xblock, "R0_BLOCK": 256}, "num_warps": warps, "num_stages": 1}
    return standalone_module(target.source, target.name, cfg, ["xnumel", "r0_numel"], [("xnumel", xblock)])


def _settings(server: ScriptedLLM) -> LLMSettings:
    return LLMSettings.from_env(server.env())


def test_a_duplicate_candidate_is_recorded_but_never_measured_and_the_executor_hears_so():
    first = _variant(2, 4)
    # the same program: a comment, other blank lines and a renamed local variable of the launcher
    same = first.replace("    grid = (", "    # try again\n\n    grid = (").replace("grid", "launch_grid")
    assert same != first and fingerprint(same) == fingerprint(first)
    script = [fenced(first), fenced(same), fenced(_variant(4, 2))]
    evaluator = InterpreterEvaluator(lambda c: 1.0)
    with ScriptedLLM(script) as server:
        gen = LLMGenerator(_settings(server))
        result = search_kernel(small_reduction(), [gen], evaluator, SearchConfig(iterations=3, plans_per_iteration=1))
    assert [a.gate for a in result.attempts] == ["timed", "duplicate", "timed"], [a.feedback for a in result.attempts]
    dup = result.attempts[1]
    assert dup.metrics["duplicate_of"] == result.attempts[0].candidate.id and dup.kernel_ms is None
    # measured twice in all: the duplicate never reached the evaluator
    assert sum(len(b) for b in evaluator.batches) == 2 and all(
        fingerprint(c.source) != fingerprint(first) or c.source == first for b in evaluator.batches for c in b)
    assert "rejected at duplicate" in user_text(server.requests[2]) and "not run again" in user_text(
        server.requests[2])


def test_diverse_select_keeps_each_chains_best_across_llm_chains():
    """Two chains of the LLM generator, each with its own direction from the planner: chain 0's candidates are
    all faster than chain 1's, yet the beam keeps chain 1's best (DiverseSelect)."""
    ms: dict[str, float] = {}
    fast = [_variant(x, w) for x, w in ((1, 2), (2, 2), (4, 2))]
    slow = [_variant(x, w) for x, w in ((1, 8), (2, 8), (4, 8))]
    for i, src in enumerate(fast):
        ms[fingerprint(src)] = 0.5 - 0.1 * i
    for i, src in enumerate(slow):
        ms[fingerprint(src)] = 3.0 - 0.5 * i

    def planner(body):
        text = user_text({"body": body})
        return plan("block-sizes", "CHAIN-ZERO plan") if "Focus on memory traffic" in text else plan(
            "warps-and-stages", "CHAIN-ONE plan")

    def executor(body):
        text = user_text({"body": body})
        turns = sum(m["role"] == "assistant" for m in body["messages"])
        return fenced((fast if "CHAIN-ZERO" in text else slow)[turns])

    evaluator = InterpreterEvaluator(lambda c: ms[fingerprint(c.source)])
    with ScriptedLLM([executor], planner=[planner]) as server:
        gen = LLMGenerator(_settings(server))
        cfg = SearchConfig(iterations=3, plans_per_iteration=2, beam_width=3, chains=2)
        result = search_kernel(small_reduction(), [gen], evaluator, cfg)
    assert [[c.chain for c in b] for b in evaluator.batches] == [[0, 1]] * 3
    assert all(a.passed for a in result.attempts) and len(result.attempts) == 6
    by_chain = {c: sorted((a for a in result.attempts if a.candidate.chain == c), key=lambda a: a.kernel_ms)
                for c in (0, 1)}
    # by global latency alone the beam would be chain 0's three; DiverseSelect keeps chain 1's best
    assert [a.kernel_ms for a in result.beam] == [a.kernel_ms for a in by_chain[0][:2]] + [by_chain[1][0].kernel_ms]
    assert {a.candidate.params["strategy"] for a in by_chain[0]} == {"block-sizes"}
    assert {a.candidate.params["strategy"] for a in by_chain[1]} == {"warps-and-stages"}
    # each chain's planner prompt carried its own direction
    focus = [("Focus on memory traffic" in user_text(r), "Focus on parallelism" in user_text(r))
             for r in server.planner_requests]
    assert focus.count((True, False)) == 3 and focus.count((False, True)) == 3
    assert all(is_planner(r["body"]) for r in server.planner_requests)


# --- the command line -----------------------------------------------------------------------------------------

def test_search_controls_on_the_command_line_use_specs_symbols(tmp_path):
    import subprocess
    import sys

    from kernelopt.cli.main import search_options

    assert search_options("T=3, N=2,K=1,B=2,Q=4,s+=1.1,s-=1.5,chains=2,meltdown_failures=5") == {
        "iterations": 3, "plans_per_iteration": 2, "executor_retries": 1, "beam_width": 2, "memory_size": 4,
        "memory_success": 1.1, "memory_slowdown": 1.5, "chains": 2, "meltdown_failures": 5}
    proc = subprocess.run([sys.executable, "-m", "kernelopt.cli.main", "optimize", str(KERNEL), "--search", "K=-1",
                           "--workdir", str(tmp_path / "run")], cwd=KERNEL.parents[2], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and "executor_retries" in proc.stderr and not (tmp_path / "run").exists()


def test_the_planner_prompt_carries_dispatch_context_ncu_and_roofline_of_a_model_kernel():
    from kernelopt.agents.llm import LLMClient
    from kernelopt.agents.planner import Planner
    from kernelopt.compiled.decompose import decompose
    from kernelopt.pipeline.model_job import dispatch_neighbours
    from kernelopt.search.generator import KernelTarget

    captured = Path(__file__).parent / "testdata" / "captured_h200"
    g = decompose((captured / "01_linear_bias_gelu" / "baseline_module.py").read_text())
    assert dispatch_neighbours(g, "triton_poi_fused_add_addmm_gelu_0") == {"before": ["extern_kernels.mm"],
                                                                           "after": []}
    conv = decompose((captured / "03_conv_bn_relu" / "baseline_module.py").read_text())
    assert dispatch_neighbours(conv, "triton_poi_fused_convolution_0")["after"] == ["extern_kernels.convolution"]
    kernel = g.kernels["triton_poi_fused_add_addmm_gelu_0"]
    ncu = {"duration_ms": 0.012, "memory_sol_pct": 45.5, "compute_sol_pct": 12.0, "registers": 32,
           "achieved_occupancy_pct": 61.0, "rules": [{"name": "UncoalescedGlobalAccess",
                                                      "message": "loads are not coalesced",
                                                      "estimated_speedup_pct": 30.0}]}
    target = KernelTarget(kernel.name, kernel.source, kernel.kind, kernel.arg_names, kernel.signature, [],
                          profile={"share": 0.25, "dispatch": dispatch_neighbours(g, kernel.name), "ncu": ncu,
                                   "roofline_fraction": 0.4, "roofline_ceiling": 1.12, "tier": "memory-bound"})
    with ScriptedLLM(["unused"], planner=[plan("memory-coalescing", "Coalesce the loads.")]) as server:
        p = Planner(LLMClient(_settings(server))).plan(
            target, kind="Triton kernel", source=kernel.source, chain=1, memory="- [failed] x", avoid=[],
            recent_strategies=["block-sizes"], diversify=True)
    text = user_text(server.planner_requests[0])
    assert "library calls before it: extern_kernels.mm; after it: none" in text
    assert "share of the model's GPU time: 25.0%" in text and "40% of the measured memory bandwidth" in text
    assert "memory_sol_pct=45.5" in text and "registers=32" in text and "loads are not coalesced" in text
    assert "Focus on parallelism" in text and "(block-sizes): choose a substantially different" in text
    assert (p.strategy, p.text, p.avoided) == ("memory-coalescing", "Coalesce the loads.", False)
