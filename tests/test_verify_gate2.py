"""Gate 2: each bad candidate is rejected on its own, with feedback that names the fault.

The kernels (tests/kernels/) run on the Triton interpreter with CPU tensors, or
on CUDA when a GPU is present. References are recorded the way the pipeline
records them: pure outputs poisoned before Inductor's (here: the reference's) launch.
"""
from __future__ import annotations

import uuid

import pytest
import torch

from kernelopt.compiled.kernel_io import KernelIO, clone_arg
from kernelopt.verify.gate2_kernel import check_kernel, check_kernel_in_child, check_kernel_outputs, reference_io
from kernelopt.verify.launch import load_candidate
from tests.kernels import source

PW_NAMES = ["in_ptr0", "out_ptr0", "xnumel"]
N = 1000  # not a multiple of the block (128): a missing tail shows


def fresh(src: str) -> str:
    """The same source under a new module identity: no state left over from another test."""
    return src + f"\n# {uuid.uuid4().hex}\n"


def randn(seed: int, *shape: int, device: str) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(device)


def record(ref: str, make_args, arg_names, seeds=(0, 1, 2)) -> list[KernelIO]:
    launcher = load_candidate(source(ref), "ref")
    return [reference_io(launcher, make_args(s), ref, arg_names) for s in seeds]


@pytest.fixture
def pointwise_ios(device):
    # zeros, not empty: reused memory could already hold the result and hide the write
    return record("pointwise_ref", lambda s: [randn(s, N, device=device), torch.zeros(N, device=device), N], PW_NAMES)


def test_correct_candidates_pass(pointwise_ios):
    for name in ("pointwise_ref", "pointwise_good_block256"):
        r = check_kernel(source(name), pointwise_ios, arg_names=PW_NAMES)
        assert r.passed, r.message
        assert r.gate == "gate2" and r.metrics["seeds"] == 3
        assert r.metrics["max_abs_err_arg1"] == 0.0


def test_wrong_mask_drops_the_tail(pointwise_ios):
    r = check_kernel(source("pointwise_wrong_mask"), pointwise_ios, arg_names=PW_NAMES)
    assert not r.passed
    assert "output arg 1 (out_ptr0)" in r.message
    assert f"{N % 128} were never written" in r.message and "index (896)" in r.message
    assert r.message.endswith("seed 0") and r.metrics["failed_seed"] == 0


def test_overwriting_an_input_is_rejected(pointwise_ios):
    r = check_kernel(source("pointwise_overwrites_input"), pointwise_ios, arg_names=PW_NAMES)
    assert not r.passed
    assert "input arg 0 (in_ptr0) was modified" in r.message and f"{N} of {N} elements differ" in r.message


def test_writing_past_the_end_is_caught_by_the_guard_band(pointwise_ios):
    r = check_kernel(source("pointwise_writes_past_end"), pointwise_ios, arg_names=PW_NAMES)
    assert not r.passed
    assert "arg 1 (out_ptr0)" in r.message
    assert f"{128 - N % 128} past the end" in r.message


def test_stale_cached_results_fail_on_the_second_seed(pointwise_ios):
    r = check_kernel(fresh(source("pointwise_stale_cache")), pointwise_ios, arg_names=PW_NAMES)
    assert not r.passed
    assert r.metrics["failed_seed"] == 1
    assert "max abs error" in r.message and "earlier call" in r.message


def test_writing_nothing_leaves_the_poison(pointwise_ios):
    r = check_kernel(source("pointwise_writes_nothing"), pointwise_ios, arg_names=PW_NAMES)
    assert not r.passed
    assert f"{N} were never written" in r.message and r.metrics["failed_seed"] == 0


def test_a_constant_captured_from_the_first_call_passes_only_seed_0(device):
    names = ["in_ptr0", "in_ptr1", "out_ptr0", "xnumel"]
    ios = record("shift_ref", lambda s: [randn(s, N, device=device), randn(100 + s, 1, device=device),
                                         torch.empty(N, device=device), N], names)
    assert check_kernel(source("shift_ref"), ios, arg_names=names).passed
    r = check_kernel(fresh(source("shift_hardcoded")), ios, arg_names=names)
    assert not r.passed and r.metrics["failed_seed"] == 1
    assert "output arg 2 (out_ptr0): max abs error" in r.message and r.message.count("seed 1") == 1


def test_wrong_reduction_axis(device):
    names = ["in_ptr0", "out_ptr0", "xnumel", "r0_numel"]
    ios = record("rowsum_ref", lambda s: [randn(s, 64, 128, device=device), torch.empty(64, device=device), 64, 128],
                 names)
    expected = ios[0].before[0].sum(dim=1)
    assert torch.allclose(ios[0].after[1], expected, atol=1e-4)  # the fixture itself is right
    assert check_kernel(source("rowsum_ref"), ios, arg_names=names).passed
    r = check_kernel(source("rowsum_wrong_axis"), ios, arg_names=names)
    assert not r.passed
    assert "output arg 1 (out_ptr0): max abs error" in r.message and "exceeds atol 0.001" in r.message


def test_in_out_arguments_keep_their_incoming_value(device):
    names = ["in_out_ptr0", "in_ptr0", "xnumel"]
    ios = record("inout_ref", lambda s: [randn(s, N, device=device), randn(50 + s, N, device=device), N], names)
    assert ios[0].written() == [0]
    good = check_kernel(source("inout_ref"), ios, arg_names=names)
    assert good.passed, good.message
    assert good.metrics["max_abs_err_arg0"] == 0.0
    bad = check_kernel(source("inout_ignores_before"), ios, arg_names=names)
    assert not bad.passed and "output arg 0 (in_out_ptr0): max abs error" in bad.message
    # without names, a written argument keeps its recorded value: same verdicts
    assert check_kernel(source("inout_ref"), ios).passed
    assert not check_kernel(source("inout_ignores_before"), ios).passed


def test_without_names_and_without_poisoned_recording_the_tail_is_still_caught(device):
    """A plain recording (outputs zero before the launch, not poisoned), no arg names."""
    ref = load_candidate(source("pointwise_ref"), "ref")
    ios = []
    for s in range(3):
        before = [randn(s, N, device=device), torch.zeros(N, device=device), N]
        args = [clone_arg(a) for a in before]
        ref.run(*args)
        ios.append(KernelIO("pointwise", before, args))
    assert check_kernel(source("pointwise_good_block256"), ios).passed
    r = check_kernel(source("pointwise_wrong_mask"), ios)
    assert not r.passed and "output arg 1" in r.message and "index (896)" in r.message
    assert not check_kernel(source("pointwise_writes_nothing"), ios).passed


def test_reference_launcher_detects_pure_outputs_itself(device):
    """With the original kernel at hand and no names, a pure output is found and poisoned."""
    ref = load_candidate(source("pointwise_ref"), "ref")
    before = [randn(0, N, device=device), torch.zeros(N, device=device), N]
    after = [clone_arg(a) for a in before]
    ref.run(*after)
    ios = [KernelIO("pointwise", before, after)]
    ok = check_kernel(source("pointwise_ref"), ios, reference=ref)
    assert ok.passed and ok.metrics.get("max_abs_err_arg1") == 0.0
    bad = check_kernel(source("pointwise_wrong_mask"), ios, reference=ref)
    assert not bad.passed and "never written" in bad.message  # poisoned, so the tail shows as unwritten


def test_integer_outputs_must_match_exactly(device):
    names = ["in_ptr0", "out_ptr0", "xnumel"]
    ios = record("quantize_ref", lambda s: [randn(s, N, device=device),
                                            torch.empty(N, dtype=torch.int32, device=device), N], names)
    assert check_kernel(source("quantize_ref"), ios, arg_names=names).passed
    r = check_kernel(source("quantize_off_by_one"), ios, arg_names=names)
    assert not r.passed and "output arg 1 (out_ptr0)" in r.message and "differ" in r.message


def test_an_import_error_is_reported_not_raised(pointwise_ios):
    r = check_kernel("def run(:\n", pointwise_ios)
    assert not r.passed and "SyntaxError" in r.message


def test_gate2_in_a_child_process(pointwise_ios, tmp_path):
    path = tmp_path / "ios.pt"
    torch.save([KernelIO(io.kernel, [clone_arg(a) for a in io.before], [clone_arg(a) for a in io.after])
                for io in pointwise_ios], path)
    env = {"TRITON_INTERPRET": "1"} if not torch.cuda.is_available() else None
    ok = check_kernel_in_child(source("pointwise_ref"), str(path), timeout_s=60, env=env, arg_names=PW_NAMES)
    assert ok.passed, ok.message
    crash = check_kernel_in_child(source("crashes_process"), str(path), timeout_s=60, env=env)
    assert not crash.passed and "crashed the process" in crash.message


def _launch_pointwise(x):
    out = torch.empty_like(x)
    load_candidate(source("pointwise_ref"), "single").run(x, out, x.numel())
    return out


def test_single_kernel_mode_compares_whole_outputs(device):
    def make(seed):
        return [randn(seed, N, device=device)]

    ok = check_kernel_outputs(_launch_pointwise, lambda x: x * 2 + 1, make)
    assert ok.passed and ok.metrics["seeds"] == 3
    wrong = check_kernel_outputs(_launch_pointwise, lambda x: x * 2 + 1.01, make)
    assert not wrong.passed and "output 0: max abs error" in wrong.message and "seed 1" in wrong.message

    def in_place(x):
        x.mul_(2).add_(1)
        return x.sum()

    bad = check_kernel_outputs(lambda x: _launch_pointwise(x).sum(), in_place, make, rtol=1e-3, atol=1e-2)
    assert not bad.passed and "input 0 after the call (the reference modified it)" in bad.message


def test_the_pipelines_recording_poisoned_outputs_is_recognised_without_names(device):
    """compiled.kernel_io's recorder poisons out_ptr* before the launch; no names are passed on."""
    from kernelopt.compiled.kernel_io import poison_

    ref = load_candidate(source("pointwise_ref"), "ref")
    ios = []
    for s in range(3):
        before = [randn(s, N, device=device), torch.empty(N, device=device), N]
        poison_(before[1])
        after = [clone_arg(a) for a in before]
        ref.run(*after)
        ios.append(KernelIO("pointwise", before, after))
    ok = check_kernel(source("pointwise_ref"), ios)
    assert ok.passed, ok.message
    bad = check_kernel(source("pointwise_wrong_mask"), ios)
    assert not bad.passed and f"{N % 128} were never written" in bad.message


class _ReferenceOutOfMemory:
    """Inductor's kernel failing in the harness (as on a 12 GiB input): the candidates are not at fault."""

    def run(self, *args, **kwargs):
        raise MemoryError("CUDA out of memory (simulated)")


def test_a_reference_that_cannot_run_is_a_harness_error_not_a_candidate_failure(pointwise_ios):
    r = check_kernel(source("pointwise_ref"), pointwise_ios, reference=_ReferenceOutOfMemory(), arg_names=PW_NAMES)
    assert not r.passed and r.metrics["harness_error"] is True
    assert r.message.startswith("could not run the reference: ") and "out of memory" in r.message


def test_recorded_launches_hold_an_untouched_input_once(pointwise_ios):
    io = pointwise_ios[0]
    assert io.after[0] is io.before[0]  # the input: the launch left it alone
    assert io.after[1] is not io.before[1] and io.written() == [1]
    assert io.nbytes() == io.before[0].untyped_storage().nbytes() * 3  # input once, output before and after


def test_seeds_recorded_on_demand_are_held_one_at_a_time(device):
    """Where the device cannot hold every seed, each is recorded again when its turn comes."""
    from kernelopt.compiled.kernel_io import RecordedOnDemand

    launcher = load_candidate(source("pointwise_ref"), "ref")
    recorded: list[int] = []

    def record(seed):
        recorded.append(seed)
        return reference_io(launcher, [randn(seed, N, device=device), torch.zeros(N, device=device), N],
                            "pointwise_ref", PW_NAMES)

    ios = RecordedOnDemand(record, [1, 2, 3], first=record(1))
    ok = check_kernel(source("pointwise_good_block256"), ios, arg_names=PW_NAMES)
    assert ok.passed and ok.metrics["seeds"] == 3, ok.message
    held = ios[2]
    assert ios[0].before and not held.before  # asking for seed 0 released seed 2's tensors
    assert recorded == [1, 2, 3, 1]
    bad = check_kernel(fresh(source("pointwise_stale_cache")), ios, arg_names=PW_NAMES)
    assert not bad.passed and bad.metrics["failed_seed"] == 1  # seeds differ: it is still three seeds


def test_the_memory_plan_holds_one_seed_at_a_time_only_where_the_device_cannot_hold_them_all():
    from kernelopt.search.evaluate import plan_one_seed_at_a_time

    gib = 1 << 30
    assert not plan_one_seed_at_a_time(1 * gib, 3, 139 * gib)
    assert plan_one_seed_at_a_time(36 * gib, 3, 139 * gib)  # a 12 GiB input, its output, three seeds
    assert not plan_one_seed_at_a_time(36 * gib, 3, None)  # no device: nothing to plan


# --- the float64 branch, for references that run in float64 (library groups with no Triton kernel) ----

GEMM_NAMES = ["in_ptr0", "in_ptr1", "out_ptr0"]
K_LARGE = 1 << 18  # outputs near 500: fp32's own rounding exceeds atol 1e-3 on elements near zero


class _LibraryMM:
    """A library group's reference as the pipeline installs it: its statement is a library call."""

    def run(self, a, b, out, stream=None):
        torch.mm(a, b, out=out)


CHUNKED_MM = '''
import torch
def run(a, b, out, stream=None):  # another summation order, all in fp32: as accurate as the reference
    out.copy_(sum(torch.mm(a[:, k:k + 4096], b[k:k + 4096]) for k in range(0, a.shape[1], 4096)))
'''
BF16_MM = '''
import torch
def run(a, b, out, stream=None):  # reduced precision: far from float64
    out.copy_(torch.mm(a.bfloat16(), b.bfloat16()).float())
'''


@pytest.fixture
def large_k_ios(device):
    return [reference_io(_LibraryMM(), [randn(s, 8, K_LARGE, device=device), randn(s + 7, K_LARGE, 8, device=device),
                                        torch.zeros(8, 8, device=device)], "mm", GEMM_NAMES) for s in (0, 1)]


@pytest.fixture
def cancelling_k_ios(device):
    """K = 2^18 products whose halves nearly cancel (a·[y; z - y] with a = [x, x], y scaled by 64, z
    tiny): outputs near 0.4 in exact arithmetic, computed through partial sums near 32,000, so fp32's
    rounding in any summation order is far above atol 1e-3 whatever the BLAS's blocking. (Plain randn
    outputs near 500 left the two orders 0.00098 apart on one CPU, under atol: whether allclose failed
    depended on the machine. Halves that cancel exactly were summed alike by the BLAS: exactly 0.)"""
    def args(s: int) -> list:
        half = K_LARGE // 2
        x, y = randn(s, 8, half, device=device), randn(s + 7, half, 8, device=device) * 64
        z = randn(s + 13, half, 8, device=device) * 1e-3
        return [torch.cat([x, x], 1), torch.cat([y, z - y], 0), torch.zeros(8, 8, device=device)]
    return [reference_io(_LibraryMM(), args(s), "mm", GEMM_NAMES) for s in (0, 1)]


def test_a_large_k_gemm_in_another_order_fails_allclose_but_passes_the_float64_branch(cancelling_k_ios):
    plain = check_kernel(fresh(CHUNKED_MM), cancelling_k_ios, reference=_LibraryMM(), arg_names=GEMM_NAMES)
    assert not plain.passed and "exceeds atol" in plain.message  # the fixed tolerance is below fp32's rounding
    r = check_kernel(fresh(CHUNKED_MM), cancelling_k_ios, reference=_LibraryMM(), arg_names=GEMM_NAMES,
                     reference64=_LibraryMM())
    assert r.passed, r.message
    assert 0 < r.metrics["gate2_rho_arg2"] < 10


def test_the_float64_branch_rejects_reduced_precision_and_names_rho(large_k_ios):
    r = check_kernel(fresh(BF16_MM), large_k_ios, reference=_LibraryMM(), arg_names=GEMM_NAMES,
                     reference64=_LibraryMM())
    assert not r.passed and "float64 branch" in r.message and "rho_max 10" in r.message


class _Float32Only:
    """A reference compiled for fp32 (as a Triton kernel is): float64 operands make it raise."""

    def run(self, a, b, out, stream=None):
        if a.dtype != torch.float32:
            raise TypeError("compiled for float32")
        torch.mm(a, b, out=out)


def test_a_reference_that_cannot_run_in_float64_leaves_allclose_verdict(cancelling_k_ios):
    r = check_kernel(fresh(CHUNKED_MM), cancelling_k_ios, reference=_LibraryMM(), arg_names=GEMM_NAMES,
                     reference64=_Float32Only())
    assert not r.passed and "exceeds atol" in r.message and not r.metrics.get("harness_error")


def test_comparisons_in_chunks_say_what_one_whole_pass_says(monkeypatch):
    """Gate 2 compares a 12 GiB output chunk by chunk (core.compare.COMPARE_CHUNK): same verdicts, same feedback."""
    from kernelopt.core import compare
    from kernelopt.core.compare import compare_close, max_abs_error, poison_

    ref = torch.randn(64, 33, generator=torch.Generator().manual_seed(3))
    wrong = ref.clone()
    wrong[5, 7] += 0.5  # the first mismatch
    wrong[40, 2] -= 2.0  # the worst one, in another chunk
    unwritten = ref.clone()
    poison_(unwritten[60:])
    nan_one_side = ref.clone()
    nan_one_side[10, 10] = float("nan")
    cases = [(ref.clone(), ref), (wrong, ref), (unwritten, ref), (nan_one_side, ref)]
    whole = [(compare_close(a, e, 1e-3, 1e-3, "out"), max_abs_error(a, e)) for a, e in cases]
    monkeypatch.setattr(compare, "COMPARE_CHUNK", 100)  # 22 chunks of the 2112 elements
    chunked = [(compare_close(a, e, 1e-3, 1e-3, "out"), max_abs_error(a, e)) for a, e in cases]
    assert chunked == whole
    assert whole[0] == (None, 0.0)
    assert "max abs error 2 at index (40, 2)" in whole[1][0] and "the first at index (5, 7)" in whole[1][0]
    assert "132 were never written" in whole[2][0] and "NaN must appear" in whole[3][0]
