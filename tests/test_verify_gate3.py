"""Gate 3: allclose(1e-4), then the float64 fallback (ρ, exact branch), and the tf32 policy."""
from __future__ import annotations

import pytest
import torch

from kernelopt.verify.gate3_model import check_model


def randn64(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def alternating(n: int) -> torch.Tensor:
    return torch.where(torch.arange(n) % 2 == 0, 1.0, -1.0)


def test_identical_outputs_pass_by_allclose_and_still_log_rho():
    r64 = randn64(0, 100)
    r32 = r64.float()
    calls = []

    def lazy_r64():
        calls.append(1)
        return [r64]

    r = check_model([r32], [r32.clone()], lazy_r64, "strict")
    assert r.passed and r.gate == "gate3" and r.metrics["branch"] == "allclose"
    assert calls == [1]  # computed for the log even though allclose decided
    assert r.metrics["d_opt"] == r.metrics["d_ref"] > 0 and r.metrics["rho"] == pytest.approx(1.0)


def test_without_r64_a_pass_has_no_rho_and_a_failure_says_why():
    r32 = randn64(1, 50).float()
    ok = check_model([r32], [r32 + 1e-6], None, "strict")
    assert ok.passed and ok.metrics["rho"] is None and ok.metrics["branch"] == "allclose"
    bad = check_model([r32], [r32 + 1e-2], None, "strict")
    assert not bad.passed and "no float64 reference" in bad.message


def test_tf32_level_error_passes_only_under_the_tf32_policy():
    r64 = randn64(2, 1000)
    r32 = r64.float()
    o32 = r32 * (1 + 1e-3 * alternating(1000))  # TF32-like relative error, deterministic
    strict = check_model([r32], [o32], [r64], "strict")
    assert not strict.passed and strict.metrics["branch"] == "rho" and strict.metrics["rho"] > 10
    assert "ρ_max 10" in strict.message and "allclose rtol=atol=1e-4 failed" in strict.message
    tf32 = check_model([r32], [o32], [r64], "tf32")
    assert tf32.passed and tf32.metrics["branch"] == "tf32" and tf32.metrics["policy"] == "tf32"
    assert tf32.metrics["rho"] == strict.metrics["rho"]  # ρ is logged for the accepted candidate


def test_emulated_tf32_matmul_fails_strict_and_passes_tf32():
    def tf32(x):  # keep 10 mantissa bits, as TF32 tensor cores do
        return (x.view(torch.int32) & ~0x1FFF).view(torch.float32)

    a, b = randn64(3, 64, 256), randn64(4, 256, 64)
    r64, r32 = a @ b, a.float() @ b.float()
    o32 = tf32(a.float()) @ tf32(b.float())
    assert not check_model([r32], [o32], [r64], "strict").passed
    assert check_model([r32], [o32], [r64], "tf32").passed


def test_rho_branch_accepts_an_error_comparable_to_eager_fp32():
    r64 = randn64(5, 500)
    r32 = (r64 + 1e-3 * alternating(500).double()).float()  # eager fp32 itself is 1e-3 off
    near = (r64 - 2e-3 * alternating(500).double()).float()  # 2x eager's error: ρ ≈ 2
    r = check_model([r32], [near], [r64], "strict")
    assert r.passed and r.metrics["branch"] == "rho" and 1.5 < r.metrics["rho"] < 2.5
    far = (r64 + 2e-2 * alternating(500).double()).float()  # ρ ≈ 20
    bad = check_model([r32], [far], [r64], "tf32")  # 2e-2 is above the tf32 bound too
    assert not bad.passed and bad.metrics["branch"] == "rho" and bad.metrics["rho"] > 10


def test_exact_ops_take_the_exact_branch():
    x = randn64(6, 64, 32).float().double()  # the fp32 input, run in float64 (as the pipeline does)
    r64_max, r64_arg = x.max(dim=1)
    r32_max, r32_arg = x.float().max(dim=1)
    assert float((r32_max.double() - r64_max).abs().max()) < 1e-8  # max is exact: d_ref = 0
    bumped = r32_max + 1e-3  # 1e-3 / max|r32| (~3) > 1e-4
    r = check_model([r32_max, r32_arg], [bumped, r32_arg], [r64_max, r64_arg], "strict")
    assert not r.passed and r.metrics["branch"] == "exact" and "d_ref" in r.message

    big32, big64 = r32_max * 1024, r64_max * 1024  # exact scaling: still d_ref = 0
    big32[0], big64[0] = 1.0, 1.0
    off = big32.clone()
    off[0] += 0.1  # fails allclose(1e-4) at a small element, but 0.1 / max|r32| (~3000) <= 1e-4
    r = check_model([big32, r32_arg], [off, r32_arg], [big64, r64_arg], "strict")
    assert r.passed and r.metrics["branch"] == "exact" and r.metrics["d_ref"] == 0.0, r.message

    wrong_index = r32_arg.clone()
    wrong_index[3] = (wrong_index[3] + 1) % 32
    r = check_model([r32_max, r32_arg], [r32_max, wrong_index], [r64_max, r64_arg], "tf32")
    assert not r.passed and r.metrics["branch"] == "exact" and "output 1" in r.message
    assert "index (3)" in r.message


def test_an_index_may_follow_float64_where_fp32_eager_broke_a_near_tie():
    r32, r64 = torch.tensor([1, 2, 5]), torch.tensor([1, 3, 5])
    assert check_model([r32], [torch.tensor([1, 3, 5])], [r64], "strict").metrics["branch"] == "exact"
    assert check_model([r32], [torch.tensor([1, 3, 5])], [r64], "strict").passed
    assert not check_model([r32], [torch.tensor([1, 4, 5])], [r64], "strict").passed


def test_nan_must_match_the_reference_positions():
    r32 = torch.tensor([1.0, float("nan"), 3.0])
    assert check_model([r32], [r32.clone()], None, "strict").passed
    moved = torch.tensor([float("nan"), 2.0, 3.0])
    r = check_model([r32], [moved], [torch.tensor([1.0, float("nan"), 3.0], dtype=torch.float64)], "tf32")
    assert not r.passed and "NaN" in r.message


def test_shape_and_count_mismatches_fail():
    r32 = torch.zeros(4, 4)
    assert "float32[4, 4]" in check_model([r32], [torch.zeros(16)], None, "strict").message
    assert not check_model([r32], [r32, r32], None, "strict").passed


def test_several_seeds_at_once_by_concatenating_leaves():
    seeds = [randn64(s, 100) for s in (7, 8, 9)]
    r32 = [t.float() for t in seeds]
    o32 = [t.clone() for t in r32]
    o32[2] = o32[2] + 0.05
    r = check_model(r32, o32, seeds, "strict")
    assert not r.passed and "output 2" in r.message


def test_unknown_policy_is_an_error():
    with pytest.raises(ValueError):
        check_model([torch.zeros(1)], [torch.zeros(1)], None, "fast")


def test_a_nan_in_eager_fp32_does_not_make_rho_zero():
    r64 = randn64(10, 100)
    r32 = r64.float()
    r32[0] = float("nan")  # say fp32 eager overflowed here; float64 did not
    o32 = r32 + 0.5  # far off everywhere, but NaN in the same place
    r = check_model([r32], [o32], [r64], "strict")
    assert not r.passed and r.metrics["branch"] == "rho" and r.metrics["rho"] > 10
    assert r.metrics["d_ref"] < 1e-6  # measured where both references are finite
