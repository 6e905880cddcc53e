"""Stage 5: which kernels are searched — Amdahl by time share, and the measured memory roofline."""
from __future__ import annotations

import types

import pytest
import torch

from kernelopt.profiling.baseline import BaselineProfile, KernelShare
from kernelopt.profiling.roofline import (
    bytes_per_call,
    extent_bytes,
    launch_bytes,
    measured_bandwidth_gbps,
    model_ceiling,
)
from kernelopt.search.strategy import fallback_cause, plan_targets, required_kernel_speedup


def profile(*kernels: KernelShare, noise_pct: float = 0.0) -> BaselineProfile:
    triton = sum(k.share for k in kernels if k.kind == "triton")
    return BaselineProfile(end_to_end_ms=1.0, noise_pct=noise_pct, timing_method="do_bench", gpu_total_ms=1.0,
                           kernels=list(kernels), library_share=1.0 - triton, triton_share=triton)


def triton(name: str, share: float, fraction: float | None = None) -> KernelShare:
    return KernelShare(name, "triton", share, share, roofline_fraction=fraction)


# ---------------------------------------------------------------- the byte count


def test_extent_bytes_counts_what_the_strides_reach():
    x = torch.zeros(4, 8)
    assert extent_bytes(x) == 4 * 8 * 4
    assert extent_bytes(x.t()) == 4 * 8 * 4  # a transpose reaches the same memory
    assert extent_bytes(torch.zeros(8).expand(4, 8)) == 8 * 4  # a broadcast row is read once
    assert extent_bytes(x[:, :2]) == 4 * 2 * 4  # 2 of every 8 columns: the elements, not the span
    assert extent_bytes(torch.zeros(0, 3)) == 0


def test_launch_bytes_counts_buffers_once_and_in_out_buffers_twice():
    a, out, acc = torch.zeros(16), torch.zeros(16), torch.zeros(16)
    names = ["in_ptr0", "in_ptr1", "out_ptr0", "in_out_ptr0", "xnumel"]
    assert launch_bytes([a, a, out, acc, 16], names) == 64 + 64 + 2 * 64


def test_bytes_per_call_sums_every_launch_and_restores_the_module():
    class Kernel:
        def run(self, x, out, n, stream=None):
            out.copy_(x)

    kernel = Kernel()
    mod = types.SimpleNamespace(triton_poi_0=kernel, other=object())
    x, out = torch.ones(32), torch.zeros(32)

    def call():  # the module launches the kernel twice per call
        mod.triton_poi_0.run(x, out, 32, stream=None)
        mod.triton_poi_0.run(out, x, 32, stream=None)

    moved = bytes_per_call(mod, {"triton_poi_0": ["in_ptr0", "out_ptr0", "xnumel"]}, call)
    assert moved == {"triton_poi_0": 2 * (128 + 128)}
    assert mod.triton_poi_0 is kernel and torch.equal(out, torch.ones(32))


def test_bandwidth_probe_gives_a_positive_figure():
    # On the CPU the harness falls back to wall-clock: the figure is only checked for sanity here.
    assert measured_bandwidth_gbps("cpu", nbytes=1 << 20) > 0


# ---------------------------------------------------------------- decisions


def test_model_ceiling_is_amdahl_at_the_roofline():
    assert model_ceiling(1.0, 0.5) == pytest.approx(2.0)
    assert model_ceiling(0.5, 0.5) == pytest.approx(1 / 0.75)
    assert model_ceiling(0.3, 1.0) == pytest.approx(1.0)


def test_kernel_at_the_roofline_is_not_searched_and_says_why():
    prof = profile(triton("k", 1.0, fraction=0.99))
    (d,) = plan_targets({"k": "pointwise"}, prof, gamma=1.03)
    assert not d.searched and d.tier == "near-optimal"
    assert "99.0% of the measured bandwidth" in d.reason and d.roofline_ceiling == pytest.approx(1 / 0.99)
    assert fallback_cause(prof, [d], 1.03).startswith("near-optimal: ")


def test_headroom_above_gamma_is_searched_even_above_80_percent_of_the_roofline():
    # A layer norm at 95% of the measured bandwidth gave a verified 1.033x on the H200.
    (d,) = plan_targets({"k": "persistent"}, profile(triton("k", 1.0, fraction=0.95)), gamma=1.03)
    assert d.searched and d.tier == "memory-bound" and "95.0% of the measured bandwidth" in d.reason


def test_noise_raises_the_bar_for_the_roofline_too():
    quiet = plan_targets({"k": "pointwise"}, profile(triton("k", 1.0, fraction=0.965)), gamma=1.03)
    noisy = plan_targets({"k": "pointwise"}, profile(triton("k", 1.0, fraction=0.965), noise_pct=1.0), gamma=1.03)
    assert quiet[0].searched and not noisy[0].searched


def test_a_kernel_measured_just_above_the_bandwidth_probe_is_at_the_roofline():
    # the H200's 12 GiB leaky_relu kernel: 0.99x of the probe in one run, 1.012x in the next
    (d,) = plan_targets({"k": "pointwise"}, profile(triton("k", 1.0, fraction=1.012)), gamma=1.03)
    assert not d.searched and d.tier == "near-optimal" and d.roofline_ceiling == pytest.approx(1.0)
    assert "101.2% of the measured bandwidth" in d.reason


@pytest.mark.parametrize("fraction", [None, 1.4, 0.0])
def test_no_decision_from_an_unknown_or_impossible_roofline(fraction):
    # Above 1 the byte count does not describe the kernel (partial reads, L2 hits): decide nothing from it.
    (d,) = plan_targets({"k": "reduction"}, profile(triton("k", 1.0, fraction=fraction)), gamma=1.03)
    assert d.searched and d.tier == "unprofiled" and d.roofline_ceiling is None


def test_small_kernels_are_skipped_by_amdahl_and_the_rest_ranked_by_share():
    prof = profile(triton("big", 0.6), triton("tiny", 0.01), KernelShare("gemm", "library", 0.39, 0.39))
    decisions = plan_targets({"tiny": "pointwise", "big": "reduction"}, prof, gamma=1.03)
    assert [d.name for d in decisions] == ["big", "tiny"]
    assert decisions[0].searched and not decisions[1].searched
    assert "too small to clear gamma" in decisions[1].reason
    assert fallback_cause(prof, decisions, 1.03) is None


def test_job_level_causes():
    assert fallback_cause(profile(), [], 1.03).startswith("no-triton-kernels: ")
    lib = profile(triton("k", 0.01), KernelShare("gemm", "library", 0.99, 0.99))
    assert fallback_cause(lib, plan_targets({"k": "pointwise"}, lib, 1.03), 1.03).startswith("library-dominated: ")
    small = profile(triton("a", 0.02), triton("b", 0.02), KernelShare("x", "other", 0.96, 0.96))
    assert fallback_cause(small, plan_targets({"a": "pointwise", "b": "pointwise"}, small, 1.03), 1.03) \
        .startswith("too-small-share: ")


def test_required_kernel_speedup_lifts_the_model_by_exactly_gamma():
    k = required_kernel_speedup(0.5, 1.03)
    assert 1 / (1 - 0.5 + 0.5 / k) == pytest.approx(1.03)
    assert required_kernel_speedup(0.02, 1.03) == float("inf")


def test_which_kernel_kinds_are_searched_comes_from_the_jobs_generators():
    # search.registry declares each generator's kernel kinds; nothing else in the strategy names them.
    from kernelopt.search.registry import GENERATORS

    prof = profile(triton("t", 0.5), triton("p", 0.5))
    kernels = {"t": "template", "p": "pointwise"}
    default = {d.name: d for d in plan_targets(kernels, prof, gamma=1.03)}
    assert default["p"].searched and not default["t"].searched
    assert "no generator of this job handles template kernels" in default["t"].reason
    assert "launch_config" in default["t"].reason and "pointwise/" in default["t"].reason
    # a job of group generators only rewrites no single kernel: nothing is searched, and it says so
    (groups_only,) = [d for d in plan_targets(kernels, prof, 1.03, ["gemm_fp32"]) if d.name == "p"]
    assert not groups_only.searched and "none rewrites single kernels" in groups_only.reason
    declared = {k for s in GENERATORS.values() for k in s.kernel_kinds}
    assert declared == {"pointwise", "reduction", "persistent"}
    assert all(plan_targets({"k": kind}, profile(triton("k", 1.0)), 1.03, ["llm"])[0].searched
               for kind in GENERATORS["llm"].kernel_kinds)
