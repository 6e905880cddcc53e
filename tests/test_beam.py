"""The beam search (search/beam.py) with the real launch-config generator.

The evaluator below really runs every candidate on the Triton interpreter
(CPU tensors; on the GPU when there is one) and compares its output with PyTorch on two seeds, so Gate 1
(it loads and launches) and Gate 2 (it is correct) are genuine. Its LATENCY
IS NOT MEASURED: interpreter wall time says nothing about a GPU, so
`fake_ms(params)` is a deterministic function of the launch parameters with a
known optimum. Everything asserted about ranking and the beam follows from it.

The kernel is Inductor's captured sum-of-squares reduction scaled down to
64x256 (same code, smaller hard-coded numels) so a search runs in seconds.
"""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Callable

import pytest
import torch

from kernelopt.compiled.runtime import load_kernel_module
from kernelopt.core.jobfiles import PlantedFile
from kernelopt.search.beam import SearchConfig, SearchHistory, diverse_select, plan_direction, search_kernel
from kernelopt.search.generator import Attempt, Candidate, KernelTarget
from kernelopt.search.generators.launch_config import LaunchConfigGenerator
from kernelopt.search.kernel_source import standalone_module
from tests.conftest import DEVICE
from tests.test_launch_config import make_target

ROWS, COLS = 64, 256
BASELINE = {"kwargs": {"XBLOCK": 1, "R0_BLOCK": 256}, "num_warps": 4, "num_stages": 1}


def small_reduction() -> KernelTarget:
    t = make_target("reduction_sum_dim", baseline=BASELINE)
    t.source = (t.source.replace("xnumel = 256", f"xnumel = {ROWS}")
                .replace("r0_numel = 4096", f"r0_numel = {COLS}").replace("4096*x0", f"{COLS}*x0"))
    t.numels = [ROWS, COLS]
    return t


def fake_ms(params: dict) -> float:
    """Deterministic stand-in for a GPU timing; optimum XBLOCK=4 R0_BLOCK=64 num_warps=2 num_stages=1."""
    return (1.0 + 0.1 * abs(math.log2(params.get("XBLOCK", 1)) - 2)
            + 0.05 * abs(math.log2(params.get("R0_BLOCK", 256)) - 6)
            + 0.02 * abs(math.log2(params.get("num_warps", 4)) - 1) + 0.01 * (params.get("num_stages", 1) - 1))


BASELINE_MS = fake_ms({**BASELINE["kwargs"], "num_warps": 4, "num_stages": 1})


class InterpreterEvaluator:
    """Gates 1-2 for real on the interpreter; latency from `latency(candidate)` (see module doc)."""

    def __init__(self, latency: Callable[[Candidate], float] | None = None):
        self.latency = latency or (lambda c: fake_ms(c.params))
        self.batches: list[list[Candidate]] = []
        self.inputs = [torch.randn(ROWS, COLS, generator=torch.Generator().manual_seed(s)).to(DEVICE)
                       for s in (0, 1)]

    def evaluate(self, candidates: list[Candidate]) -> list[Attempt]:
        self.batches.append(list(candidates))
        out = []
        for c in candidates:
            fake = self.latency(c)  # also given to failures: the beam must ignore them anyway
            try:
                mod = load_kernel_module(c.source, c.target)
                results = []
                for x in self.inputs:
                    y = torch.full((ROWS,), float("nan"), device=DEVICE)
                    mod.run(x, y, ROWS, COLS, stream=None)
                    results.append((y, (x * x).sum(1)))
            except Exception as exc:  # noqa: BLE001 - Gate 1: it must load and launch
                out.append(Attempt(c, False, "gate1", f"{type(exc).__name__}: {exc}", kernel_ms=fake))
                continue
            if not all(torch.allclose(y, ref, rtol=1e-3, atol=1e-3) for y, ref in results):
                out.append(Attempt(c, False, "gate2", "wrong result", kernel_ms=fake))
                continue
            out.append(Attempt(c, True, "timed", "ok", kernel_ms=fake, baseline_kernel_ms=BASELINE_MS))
        return out


class BrokenGenerator:
    """Fast-looking but wrong candidates: a wrong formula (Gate 2) or a launcher that raises (Gate 1)."""

    name = "broken"

    def applicable(self, target: KernelTarget):
        return None

    def propose(self, target, beam, history, budget):
        done = sum(a.candidate.generator == self.name for a in history)
        good = standalone_module(target.source, target.name, BASELINE, ["xnumel", "r0_numel"], [("xnumel", 1)])
        out = []
        for i in range(done, done + budget):
            src = (good.replace("tmp1 = tmp0 * tmp0", f"tmp1 = tmp0 * {i + 2}.0") if i % 2 == 0
                   else good.replace("    grid = (", "    raise RuntimeError('boom')\n    grid = ("))
            out.append(Candidate(target.name, src + f"# variant {i}\n", self.name, f"corrupt variant {i}",
                                 params={"variant": i}))
        return out


class SlowGenerator(LaunchConfigGenerator):
    """Correct candidates (launch configs) that the evaluator reports as slow: a weaker chain."""

    name = "slow"

    def propose(self, target, beam, history, budget):
        cands = super().propose(target, [], history, budget + 3)[3:]  # not the same configs as chain 0
        # a statement, not a comment: comments do not make another program (search.fingerprint)
        return [replace(c, source=c.source + "SLOW_CHAIN = True\n") for c in cands[:budget]]


def latency_by_generator(c: Candidate) -> float:
    return {"broken": 0.001, "slow": 5.0}.get(c.generator, 0.0) + fake_ms(c.params)


def test_search_improves_and_respects_budget_and_width():
    target = small_reduction()
    evaluator = InterpreterEvaluator()
    seen: list[Attempt] = []
    cfg = SearchConfig(iterations=5, plans_per_iteration=4, beam_width=3, max_candidates=14)
    result = search_kernel(target, [LaunchConfigGenerator()], evaluator, cfg, on_attempt=seen.append)
    assert [len(b) for b in evaluator.batches] == [4, 4, 4, 2]  # the last batch is cut to the budget
    assert result.stopped_reason == "budget" and len(result.attempts) == 14 and seen == result.attempts
    keys = [tuple(sorted(a.candidate.params.items())) for a in result.attempts]
    assert len(set(keys)) == 14 and tuple(sorted({**BASELINE["kwargs"], "num_warps": 4, "num_stages": 1}.items())) not in keys
    assert all(a.passed for a in result.attempts)  # launch configs of a correct kernel stay correct
    assert len(result.beam) == 3 and result.beam == sorted(result.beam, key=lambda a: a.kernel_ms)
    assert [a.kernel_ms for a in result.ranked] == sorted(a.kernel_ms for a in result.attempts)
    assert result.beam[0] is result.ranked[0] and result.ranked[0].kernel_ms < BASELINE_MS
    # coordinate descent: each later iteration starts from the best so far
    best_after = [min(fake_ms(c.params) for b in evaluator.batches[:i + 1] for c in b) for i in range(4)]
    assert best_after == sorted(best_after, reverse=True) and best_after[-1] < best_after[0]
    assert evaluator.batches[1][0].parent == min(result.attempts[:4], key=lambda a: a.kernel_ms).candidate.id


def test_failing_candidates_never_enter_the_beam_and_each_chain_keeps_its_best():
    target = small_reduction()
    evaluator = InterpreterEvaluator(latency_by_generator)
    gens = [LaunchConfigGenerator(), BrokenGenerator(), SlowGenerator()]
    cfg = SearchConfig(iterations=3, plans_per_iteration=4, beam_width=3, max_candidates=24)
    result = search_kernel(target, gens, evaluator, cfg)
    # N=4 over 3 chains: max(1, 4 // 3) = 1 plan per chain per iteration, in one batch
    assert [[c.chain for c in b] for b in evaluator.batches] == [[0, 1, 2]] * 3
    broken = [a for a in result.attempts if a.candidate.generator == "broken"]
    assert {a.gate for a in broken} == {"gate1", "gate2"} and not any(a.passed for a in broken)
    assert all(a.passed for a in result.attempts if a.candidate.generator != "broken")
    assert not any(a.candidate.generator == "broken" for a in result.beam + result.ranked)
    # DiverseSelect: the slow chain's best survives although chain 0 has 3 faster candidates
    assert sum(a.candidate.generator == "launch_config" for a in result.attempts) == 3
    assert {a.candidate.chain for a in result.beam} == {0, 2} and len(result.beam) == 3
    slow_best = min((a for a in result.attempts if a.candidate.generator == "slow"), key=lambda a: a.kernel_ms)
    assert slow_best in result.beam and result.beam[-1] is slow_best


def test_diverse_select_unit():
    def att(i: int, chain: int, ms: float | None, passed: bool = True) -> Attempt:
        return Attempt(Candidate("k", f"src{i}", "g", "d", chain=chain), passed, "timed", "", kernel_ms=ms)

    fast = [att(i, 0, 1.0 + i) for i in range(4)]
    slow = [att(10, 1, 9.0), att(11, 1, 8.0)]
    wrong = att(20, 2, 0.1, passed=False)
    untimed = att(21, 3, None)
    pool = fast + slow + [wrong, untimed, fast[0]]  # fast[0] twice: kept once
    assert [a.kernel_ms for a in diverse_select(pool, 3)] == [1.0, 2.0, 8.0]
    assert [a.kernel_ms for a in diverse_select(pool, 1)] == [1.0]
    assert [a.kernel_ms for a in diverse_select(pool, 10)] == [1.0, 2.0, 3.0, 4.0, 8.0, 9.0]


def test_should_stop_no_generator_and_exhaustion():
    target = small_reduction()
    evaluator = InterpreterEvaluator()
    calls = iter(range(100))
    result = search_kernel(target, [LaunchConfigGenerator()], evaluator, SearchConfig(),
                           should_stop=lambda: next(calls) >= 2)  # checked twice per iteration
    assert result.stopped_reason == "should_stop" and len(result.attempts) == 4 and result.iterations_run == 1

    template = make_target("attention_small", "triton_tem_fused_addmm_t_view_0", {})
    result = search_kernel(template, [LaunchConfigGenerator()], evaluator, SearchConfig())
    assert result.stopped_reason == "no_generator" and "template" in result.notes[0] and not result.attempts

    class Once:
        name = "once"

        def applicable(self, target):
            return None

        def propose(self, target, beam, history, budget):
            if history:
                return []
            return [Candidate(target.name, standalone_module(target.source, target.name, BASELINE,
                                                             ["xnumel", "r0_numel"], [("xnumel", 1)]),
                              self.name, "baseline config", params={"same": 1})]

    class Raises:
        name = "raises"

        def applicable(self, target):
            return None

        def propose(self, target, beam, history, budget):
            raise RuntimeError("LLM endpoint down")

    before = len(evaluator.batches)
    result = search_kernel(target, [Once(), Raises()], evaluator, SearchConfig(iterations=5))
    assert result.stopped_reason == "exhausted" and len(result.attempts) == 1 and result.ranked
    assert sum("LLM endpoint down" in n for n in result.notes) == 2  # retired after two failures
    # the job's cause reads these (pipeline.model_job: every generator failed -> no-candidates, with why)
    assert result.generator_errors == ["raises: RuntimeError: LLM endpoint down"] * 2
    assert len(evaluator.batches) - before == 1


def test_a_planted_file_ends_the_search_not_one_generator():
    """Issue 36, break 1: the LLM client refuses to append to transcripts.jsonl through a link a sandboxed child
    left in the work directory (core.jobfiles.PlantedFile, raised from the generator's call). That is not a
    generator's failure to note and retire: it reaches pipeline/job.py, which ends the job saying so."""

    class Planted:
        name = "planted"

        def applicable(self, target):
            return None

        def propose(self, target, beam, history, budget):
            raise PlantedFile(Path("transcripts.jsonl"), "a symbolic link")

    class NothingToEvaluate:
        def evaluate(self, candidates):
            raise AssertionError(f"evaluated {candidates}")

    with pytest.raises(PlantedFile, match="transcripts.jsonl in the job's work directory is a symbolic link"):
        search_kernel(small_reduction(), [LaunchConfigGenerator(), Planted()], NothingToEvaluate(), SearchConfig())


def test_meltdown_hint_reaches_the_generators():
    target = small_reduction()
    warps_then_stages = [(w, 1) for w in (1, 2, 8, 16, 32)] + [(4, s) for s in (2, 3, 4)]

    class SameMove:
        """Only ever changes num_warps or num_stages: two directions, a meltdown."""

        name = "same"

        def __init__(self):
            self.hints: list[bool] = []

        def applicable(self, target):
            return None

        def propose(self, target, beam, history, budget):
            self.hints.append(history.diversify)
            done = sum(a.candidate.generator == self.name for a in history)
            out = []
            for w, s in warps_then_stages[done:done + budget]:
                cfg = {**BASELINE, "num_warps": w, "num_stages": s}
                out.append(Candidate(target.name, standalone_module(target.source, target.name, cfg,
                                                                    ["xnumel", "r0_numel"], [("xnumel", 1)]),
                                     self.name, f"num_warps={w} num_stages={s}",
                                     params={**BASELINE["kwargs"], "num_warps": w, "num_stages": s}))
            return out

    gen = SameMove()
    cfg = SearchConfig(iterations=5, plans_per_iteration=2, beam_width=2, max_candidates=10)
    result = search_kernel(target, [gen], InterpreterEvaluator(), cfg)
    # 2 plans per iteration; after iteration 3 the last 6 directions hold 2 distinct ones,
    # so iteration 4 (and the 5th call, which finds the list exhausted) get the hint
    assert gen.hints == [False, False, False, True, True]
    assert result.diversified == [3] and result.iterations_run == 4
    assert result.stopped_reason == "exhausted" and len(result.attempts) == 8

    # the real generator varies one dimension at a time in all directions: no meltdown early on
    real = LaunchConfigGenerator()
    hints: list[bool] = []
    orig = real.propose
    real.propose = lambda t, b, h, n: (hints.append(h.diversify), orig(t, b, h, n))[1]
    search_kernel(target, [real], InterpreterEvaluator(), SearchConfig(iterations=2, max_candidates=8))
    assert hints == [False, False]


def test_plan_direction():
    c = Candidate("k", "s", "launch_config", "XBLOCK=2 ...", params={"XBLOCK": 2, "R0_BLOCK": 64, "num_warps": 4})
    assert plan_direction(c, {"XBLOCK": 1, "R0_BLOCK": 64, "num_warps": 8}) == "launch_config:XBLOCK+num_warps"
    llm = Candidate("k", "s", "llm", "Vectorize the loads with a wider block")
    assert plan_direction(llm, None) == "llm:Vectorize"
    assert isinstance(SearchHistory([], diversify=True), list)


def test_more_chains_than_generators_share_one_without_duplicates():
    evaluator = InterpreterEvaluator()
    cfg = SearchConfig(iterations=2, plans_per_iteration=4, chains=2, max_candidates=8)
    result = search_kernel(small_reduction(), [LaunchConfigGenerator()], evaluator, cfg)
    assert [[c.chain for c in b] for b in evaluator.batches] == [[0, 0, 1, 1]] * 2
    keys = {tuple(sorted(a.candidate.params.items())) for a in result.attempts}
    assert len(keys) == len(result.attempts) == 8  # chain 1 saw chain 0's pending proposals
