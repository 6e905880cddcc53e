"""Verdicts a candidate cannot forge (issue 36, item 4): adversarial candidates against Gate 3, in real children.

Each candidate below replaces the library group of a CPU capture (`linear_relu_small`: addmm + ReLU) with the
group's own statements, then spoils the output (every element 0.25) and attacks the verification from inside
its own process: it patches the comparison functions, `torch.allclose`, `pickle` (which once let a candidate
answer "speedup 1000x"), hunts for the eager reference's files to overwrite them, and writes a verdict of its
own into the work directory. Gate 3 runs as a job runs it (pipeline/gates.py:gate3): eager's outputs from one
sandboxed child, the candidate's from another, the verdict from a judge child that imports no generated code.
Every one of them must fail, with the wrong output as the reason; the honest candidate (the group's own
statements) must pass. The same suite runs on a CUDA capture in the GPU suite (`--gpu`): there the group is
cuBLAS's GEMM and Inductor's Triton epilogue, and Gate 4 times with CUDA events.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelopt.compiled.group import group_module_source, library_groups
from kernelopt.pipeline.context import JobContext
from kernelopt.pipeline.gates import gate3
from kernelopt.pipeline.options import JobOptions
from kernelopt.verify.stitched_model import StitchedRequest

PROBLEM = Path(__file__).parent / "testdata" / "problems" / "linear_relu_small.py"


ATTACKS = {
    "patches the comparison": '''
import torch
import kernelopt.verify.gate3_model as _g3
import kernelopt.core.compare as _cmp
from kernelopt.verify.result import GateResult as _GR
_g3.check_model = lambda *a, **k: _GR.ok("gate3", "forged: allclose to eager")
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.testing.assert_close = lambda *a, **k: None
for _name in dir(_cmp):
    if _name.startswith("compare"):
        setattr(_cmp, _name, lambda *a, **k: None)
''',
    "forges its reply through pickle": '''
import pickle as _pickle
from kernelopt.verify.result import GateResult as _GR
_real_dumps = _pickle.dumps
def _forged(obj, *a, **k):
    return _real_dumps(("ok", _GR.ok("gate3", "Gate 3 passed (forged)", rho=0.0)), *a, **k)
_pickle.dumps = _forged
''',
    "overwrites the reference's files": '''
import glob as _glob, os as _os, shutil as _shutil
def _hunt():
    for _d in _glob.glob("/tmp/kernelopt-reference-*") + _glob.glob("/tmp/*/kernelopt-reference-*"):
        for _f in _glob.glob(_d + "/r*.pt"):
            try:
                _os.remove(_f)
                open(_f, "wb").write(b"forged")
            except OSError:
                pass
_hunt()
''',
    "writes its own verdict": '''
import json as _json, os as _os
for _name in ("report.json", "gate3.json", "verdict.json"):
    try:
        with open(_name, "w") as _f:
            _json.dump({"outcome": "optimized", "speedup": 1000.0, "gate3": {"passed": True}}, _f)
    except OSError:
        pass
''',
}


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.fixture(scope="module", params=DEVICES)
def group_and_workdir(cpu_capture, request):
    device = request.param
    workdir = cpu_capture("linear_relu_small", device=device)
    (g,) = [g for g in library_groups((workdir / "baseline_module.py").read_text()) if not g.reason]
    assert g.op in ("addmm", "mm") and len(g.outputs) == 1, (g.op, g.outputs)  # cuBLAS or a Triton template
    if device == "cpu":
        assert g.body[-1].startswith("cpp_fused_mul_relu_0(buf1)")
    return g, workdir, device


def _spoiled(g) -> list[str]:
    """The group's statements, then every output made wrong (filled with 0.25) through its own parameter name
    (Inductor's body may `del` that name after aliasing it; the del is dropped so the name is still bound)."""
    dels = {f"del {o}" for o in g.outputs}
    return [s for s in g.body if s not in dels] + [f"{o}.fill_(0.25)" for o in g.outputs]


@pytest.fixture(scope="module")
def job_ctx(group_and_workdir):
    """One job's context for every Gate 3 below: eager's outputs are computed once, as in a job's waterfall."""
    g, workdir, device = group_and_workdir
    ctx = JobContext(str(PROBLEM), workdir, JobOptions(time_budget_s=1800))
    yield ctx
    ctx.close()


def _gate3(ctx: JobContext, g, device: str, source: str):
    req = StitchedRequest(str(PROBLEM), str(ctx.workdir), {g.name: source}, seeds=[101, 102], precision="strict",
                          device=device)
    return gate3(ctx, req)


def test_the_honest_candidate_passes_apart(group_and_workdir, job_ctx):
    g, _, device = group_and_workdir
    verdict = _gate3(job_ctx, g, device, group_module_source(g))
    assert verdict.passed, verdict.message
    assert verdict.metrics["judged_apart"] is True and verdict.metrics["seeds"] == [101, 102]


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_forging_candidate_fails_gate3(group_and_workdir, job_ctx, attack):
    g, workdir, device = group_and_workdir
    source = group_module_source(g, body=_spoiled(g), preamble=ATTACKS[attack])
    verdict = _gate3(job_ctx, g, device, source)
    assert not verdict.passed, (attack, verdict.message)
    assert "forged" not in verdict.message
    if attack == "forges its reply through pickle":  # its reply is no manifest: refused as such
        assert "not a manifest of its outputs" in verdict.message
    else:  # the judge compared the real outputs: the spoiled element is the reason
        assert "output 0" in verdict.message or "float64" in verdict.message, verdict.message
    for name in ("gate3.json", "verdict.json"):  # a verdict file in the work directory is never read
        planted = workdir / name
        if planted.exists():
            assert json.loads(planted.read_text())["speedup"] == 1000.0
            planted.unlink()


def test_the_judge_refuses_outputs_changed_after_their_child_wrote_them(tmp_path):
    import torch

    from kernelopt.verify.gate3_judge import JudgeRequest, judge_gate3
    from kernelopt.verify.model_outputs import OutputRole, OutputsManifest, _write

    ref, cand = tmp_path / "ref", tmp_path / "cand"
    ref.mkdir()
    cand.mkdir()
    reference = OutputsManifest(OutputRole.REFERENCE.value, {"r32-1": _write(ref, "r32-1", [torch.ones(3)])})
    candidate = OutputsManifest(OutputRole.CANDIDATE.value, {"o32-1": _write(cand, "o32-1", [torch.ones(3)])})
    req = JudgeRequest(str(ref), str(cand), reference, candidate, [1], precision="tf32")
    assert judge_gate3(req).passed
    torch.save([torch.zeros(3)], ref / "r32-1.pt")  # the reference replaced behind its writer's back
    verdict = judge_gate3(req)
    assert not verdict.passed and "changed after its child wrote it" in verdict.message
    (ref / "r32-1.pt").unlink()
    (ref / "r32-1.pt").symlink_to(cand / "o32-1.pt")  # or a link to the candidate's own file
    verdict = judge_gate3(req)
    assert not verdict.passed and "cannot be opened as a file" in verdict.message


# ---- Gate 4: each side timed in its own process, the rounds driven (and clocked) by the job's orchestrator ----

# a candidate 0.2 ms slower than the baseline's call (about 0.01 ms on one CPU thread: a round's 2000 iterations
# then take 0.4 s). It spins rather than sleeps: on a loaded machine a sleeping process wakes late, now and then,
# by a scheduler slice (several ms), which the round's median hides and the parent's wall clock does not.
_SLOW = ("_t0 = __import__('time').perf_counter(); "
         "any(__import__('time').perf_counter() >= _t0 + 0.0002 for _ in iter(int, 1))")

_FAKE_TIMES = '''
import kernelopt.verify.timing_apart as _ta
_real_run = _ta._run
def _fast(held, call, n):
    times, out = _real_run(held, call, n)  # does the work, reports 1 microsecond a call
    return [0.001] * len(times), out
_ta._run = _fast
'''

_SKIPS_WORK = '''
import kernelopt.verify.timing_apart as _ta
import torch as _torch
def _idle(held, call, n):  # times nothing, runs nothing: a result made up for the probes
    return [0.001] * n, [_torch.zeros(4, 8)]
_ta._run = _idle
'''


def _time_apart(g, workdir: Path, device: str, source: str, rounds: int = 3):
    from kernelopt.pipeline.gates import TimingSides, model_sides

    ctx = JobContext(str(PROBLEM), workdir, JobOptions(time_budget_s=600))
    try:
        req = StitchedRequest(str(PROBLEM), str(workdir), {g.name: source}, device=device)
        with TimingSides(ctx, model_sides(req)) as sides:
            sides.prepare()
            return sides.rounds(rounds)
    finally:
        ctx.close()


def test_gate4_times_each_side_apart_and_the_clock_agrees_with_an_honest_candidate(group_and_workdir):
    from kernelopt.verify.gate4_perf import check_clock

    g, workdir, device = group_and_workdir
    # five rounds: the clock check reads each series by its fastest round, and on a loaded machine (CI's 2 cores,
    # 3 workers) a round of a few ms a call can lose a scheduler slice in each of three
    timing, walls = _time_apart(g, workdir, device, group_module_source(g, body=g.body + [_SLOW]), rounds=5)
    assert timing.method == ("cpu-wallclock" if device == "cpu" else "do_bench")  # CUDA events, do_bench's way
    assert len(timing.rounds["candidate"]) == 5
    # its 0.2 ms is seen in every round (the spin never undershoots); not compared with the baseline's rounds,
    # which other work on a loaded machine can stretch (the suite runs in parallel workers)
    assert min(timing.rounds["candidate"]) >= 0.2, timing.rounds
    clock = check_clock(timing.rounds["baseline"], timing.rounds["candidate"], walls["baseline"], walls["candidate"])
    assert clock.passed, clock.message


def test_a_candidate_reporting_times_its_clock_contradicts_fails_gate4(group_and_workdir):
    from kernelopt.verify.gate4_perf import check_clock, check_performance

    g, workdir, device = group_and_workdir
    source = group_module_source(g, body=g.body + [_SLOW], preamble=_FAKE_TIMES)
    timing, walls = _time_apart(g, workdir, device, source)
    claimed = check_performance(timing.rounds["baseline"], timing.rounds["candidate"], 1.03)
    # what it claims: 1 us a call (a small GEMM's baseline is ~8 us on an H200, ~0.01 ms on one CPU thread) ...
    assert claimed.passed and claimed.metrics["speedup"] > 5
    clock = check_clock(timing.rounds["baseline"], timing.rounds["candidate"], walls["baseline"], walls["candidate"])
    assert not clock.passed and "disagree with the job's own clock" in clock.message  # ... and what the job saw


def test_a_candidate_that_skips_the_work_is_refused(group_and_workdir):
    from kernelopt.pipeline.gates import Gate4Refused

    g, workdir, device = group_and_workdir
    with pytest.raises(Gate4Refused, match="not the baseline's on the round's inputs"):
        _time_apart(g, workdir, device, group_module_source(g, preamble=_SKIPS_WORK), rounds=1)


def test_the_clock_check_on_numbers():
    from kernelopt.verify.gate4_perf import check_clock

    # honest: 2x on the GPU, 0.1 ms of flush and launches a call on both sides
    assert check_clock([1.0] * 3, [0.5] * 3, [1.1] * 3, [0.6] * 3).passed
    # the candidate's process reports 2x while the job's clock saw no gain
    bad = check_clock([1.0] * 3, [0.5] * 3, [1.1] * 3, [1.1] * 3)
    assert not bad.passed and bad.metrics["implied_wall_speedup"] == pytest.approx(1.1 / 0.6)
    assert check_clock([1.0] * 3, [1.2] * 3, [1.1] * 3, [1.3] * 3).passed  # slower: nothing to contradict
    # a loaded machine stretched the baseline's rounds: its times imply 1.24x where the clock saw 1.12x, within
    # what the rounds' own spread explains (seen once on 2 cores with an honest candidate 1 ms slower)
    noisy = check_clock([21.0, 24.0, 21.5], [17.0, 17.5, 17.2], [21.7, 24.6, 21.0], [19.6, 19.8, 19.5])
    assert noisy.metrics["observed_wall_speedup"] < 1 + (noisy.metrics["implied_wall_speedup"] - 1) / 2
    assert noisy.passed and noisy.metrics["clock_spread"] > 0.02, noisy.message
    # a forged 5x is far past any spread of the rounds
    forged = check_clock([21.0, 24.0, 21.5], [4.2, 4.3, 4.1], [21.7, 24.6, 21.0], [21.0, 22.5, 21.3])
    assert not forged.passed and "of spread allowed for" in forged.message
    # a candidate 1 ms slower reporting 1 us a call, while other work stretched two of the baseline's three rounds
    # to 3.6x its clean wall time (2 loaded cores): by the medians the clock saw 2.6x and agreed; by each series'
    # fastest round it sees the candidate slower
    stretched = check_clock([0.07, 0.07, 0.07], [0.001] * 3, [9.5, 9.6, 2.6], [3.65, 3.6, 3.7])
    assert not stretched.passed and stretched.metrics["observed_wall_speedup"] < 1, stretched.message
    # however wide the rounds' spread, it excuses no more than 25% of the clock's shortfall
    wide = check_clock([0.07, 0.2, 0.5], [0.001] * 3, [2.6, 6.0, 9.6], [3.6, 7.0, 3.65])
    assert not wide.passed and wide.metrics["clock_spread"] > 0.25 and "25.0% of spread allowed" in wide.message


# ---- Gate 4's sides set up while Gate 3 computes (pipeline/gates.py:gate3_while_timing_sets_up)

def _sides(g, workdir: Path, device: str, source: str):
    from kernelopt.pipeline.gates import TimingSides, model_sides

    ctx = JobContext(str(PROBLEM), workdir, JobOptions(time_budget_s=600))
    req = StitchedRequest(str(PROBLEM), str(workdir), {g.name: source}, device=device)
    return ctx, TimingSides(ctx, model_sides(req))


def test_gate4s_sides_set_up_while_gate3_computes_and_time_on_the_same_sessions(group_and_workdir):
    """Gate 3 here waits for both sides' set-up to finish: had the set-up waited for Gate 3, it would never
    see them ready. The sessions set up then time the rounds."""
    import time

    from kernelopt.pipeline.gates import gate3_while_timing_sets_up
    from kernelopt.verify.result import GateResult

    g, workdir, device = group_and_workdir
    ctx, sides = _sides(g, workdir, device, group_module_source(g))
    try:
        def gate3_waiting_for_the_sides() -> GateResult:
            deadline = time.monotonic() + 240
            while len(sides.ready) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            return GateResult.ok("gate3", f"{len(sides.ready)} sides ready during Gate 3")

        g3 = gate3_while_timing_sets_up(gate3_waiting_for_the_sides, sides)
        assert g3.passed and g3.message == "2 sides ready during Gate 3"
        timing, walls = sides.rounds(2)
        assert len(timing.rounds["baseline"]) == len(timing.rounds["candidate"]) == len(walls["candidate"]) == 2
    finally:
        sides.close()
        ctx.close()


def test_a_failed_timing_set_up_counts_only_where_gate3_passed(group_and_workdir):
    from kernelopt.pipeline.context import JobFailed
    from kernelopt.pipeline.gates import gate3_while_timing_sets_up
    from kernelopt.verify.result import GateResult

    g, workdir, device = group_and_workdir
    broken = group_module_source(g, preamble="raise RuntimeError('the candidate cannot be built')\n")
    for gate3_verdict, raised in ((GateResult.fail("gate3", "wrong outputs"), False),
                                  (GateResult.ok("gate3", "allclose"), True)):
        ctx, sides = _sides(g, workdir, device, broken)
        try:
            if raised:  # Gate 3 passed: the set-up's failure is the evaluation's
                with pytest.raises(JobFailed, match="the candidate cannot be built"):
                    gate3_while_timing_sets_up(lambda v=gate3_verdict: v, sides)
            else:  # Gate 3's verdict stands: the candidate failed Gate 3, not its timing
                assert gate3_while_timing_sets_up(lambda v=gate3_verdict: v, sides) is gate3_verdict
        finally:
            sides.close()
            ctx.close()


def test_on_the_cpu_gate4s_sides_start_only_after_a_passing_gate3(group_and_workdir):
    """The CPU's cores are what both would share: no overlap there, and no timing process for a candidate
    Gate 3 refused."""
    from kernelopt.pipeline.gates import gate3_and_timing_sides, model_sides
    from kernelopt.verify.result import GateResult

    g, workdir, device = group_and_workdir
    ctx = JobContext(str(PROBLEM), workdir, JobOptions(time_budget_s=600))
    req = StitchedRequest(str(PROBLEM), str(workdir), {g.name: group_module_source(g)}, device=device)
    try:
        refused = GateResult.fail("gate3", "wrong outputs")
        assert gate3_and_timing_sides(ctx, lambda: refused, model_sides(req), overlap=False) == (refused, None)
        passed = GateResult.ok("gate3", "allclose")
        g3, sides = gate3_and_timing_sides(ctx, lambda: passed, model_sides(req), overlap=False)
        assert g3 is passed and sides is not None
        with sides:
            assert set(sides.ready) == {"baseline", "candidate"}  # set up, ready for rounds
    finally:
        ctx.close()


def test_gate4s_sides_overlap_gate3_only_on_a_gpu_for_a_problem_that_fits_four_times():
    from kernelopt.load.stage import LoadResult
    from kernelopt.pipeline.gates import OVERLAP_MAX_BYTES, overlap_gate3

    def load(params: int, *shapes: list[int]) -> LoadResult:
        return LoadResult("model", "m", "0" * 64, list(shapes), [[1]], True, parameter_count=params)

    small = load(10_000_000, [64, 3, 224, 224])
    assert overlap_gate3("cuda", small) and not overlap_gate3("cpu", small) and not overlap_gate3("cuda", None)
    big = load(OVERLAP_MAX_BYTES // 4 - 99, [100])  # 4 GiB of fp32 parameters and inputs: four copies would not fit
    assert not overlap_gate3("cuda", big)
