"""Each library call's own time (profiling/library_calls.py): a share per call, not per kernel name.

On the CPU the instrumented module is Inductor's CPU capture of a small attention (four library calls:
two GEMMs with their bias, two batched ones); the profiler ranges' CPU times stand in for the device times
a GPU gives, which only the GPU suite sees. What is checked here is the attribution: each call timed by
its own range, the module computing exactly what it did, and the shares adding up to the library's.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernelopt.compiled import runtime
from kernelopt.compiled.decompose import decompose
from kernelopt.compiled.restitch import ModelContext
from kernelopt.profiling import library_calls
from kernelopt.profiling.baseline import BaselineProfile
from kernelopt.search.strategy import plan_groups

PROBLEM = Path(__file__).parent / "testdata" / "problems" / "attention_small.py"


@pytest.fixture(scope="module")
def attention(cpu_capture):
    workdir = cpu_capture("attention_small")
    ctx = ModelContext(str(PROBLEM), str(workdir), device="cpu")
    source = Path(ctx.captured.module_path).read_text()
    graph = decompose(source)
    steps = {s.index: s.line for s in graph.library_steps()}
    assert len(steps) >= 3, [s.target for s in graph.library_steps()]
    return ctx, source, steps


def test_each_library_call_runs_in_its_own_range_and_the_module_computes_the_same(attention):
    ctx, source, steps = attention
    instrumented = library_calls.instrumented_source(source, steps)
    assert instrumented.count(library_calls.RANGE_PREFIX) == len(steps)
    mod = ctx.module(transform=lambda src: library_calls.instrumented_source(src, steps))
    args = ctx.flat_args(ctx.inputs(0))
    want = runtime.call_module(ctx.module(), args)
    got = runtime.call_module(mod, args)
    for w, g in zip(want, got, strict=True):
        assert torch.equal(w, g)
    times = library_calls.call_times_us(lambda: runtime.call_module(mod, args), iters=3, cuda=False)
    assert set(times) == set(steps) and all(t > 0 for t in times.values()), times
    shares = library_calls.call_shares(times, 0.6)
    assert sum(shares.values()) == pytest.approx(0.6) and len(set(shares.values())) > 1, shares


def test_a_line_without_a_statement_is_an_error_not_a_silent_gap(attention):
    _, source, steps = attention
    with pytest.raises(ValueError, match="no statement of call"):
        library_calls.instrumented_source(source, {**steps, 999: 10**6})


def test_groups_count_their_own_call_not_the_whole_library(attention):
    """Five GEMM groups calling one cuBLAS kernel were each given the library's whole share ("87-88% of GPU
    time" each); with the calls timed one by one each group has its own, and together no more than 100%."""
    from kernelopt.compiled.group import library_groups

    _, source, steps = attention
    groups = [g for g in library_groups(source) if g.anchor_kind == "library"]
    assert len(groups) >= 3
    own = {str(g.anchor): 0.2 for g in groups}
    prof = BaselineProfile(end_to_end_ms=1.0, noise_pct=0.5, timing_method="t", gpu_total_ms=1.0,
                           library_share=0.2 * len(groups), triton_share=0.0, library_calls=own)
    decisions = plan_groups(groups, prof, gamma=1.05)
    assert [round(d.share, 6) for d in decisions] == [0.2] * len(groups)
    bound = plan_groups(groups, BaselineProfile(1.0, 0.5, "t", 1.0, library_share=0.8), gamma=1.05)
    assert all(d.share == pytest.approx(0.8) for d in bound)  # not timed one by one: the library share bounds each
