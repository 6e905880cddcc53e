"""Gate 3, model-level correctness with the float64 fallback (docs/architecture.md, Gate 3).

Inputs are the model's output leaves: `r32` from eager fp32, `o32` from the
re-stitched candidate, `r64` from eager float64 (given, or a callable computed
lazily). Several seeds can be checked at once by concatenating their leaves:
every quantity below is a maximum over all leaves.

Decision (metrics['branch'] says which rule decided):
  'allclose'  o32 vs r32, NaN only where r32 has NaN, at the job dtype's tolerance
              (core.tolerance: rtol = atol = 1e-4 in fp32, KernelBench's 1e-2 in bf16/fp16);
  'rho'       else, if d_ref = max|r32 − r64| ≥ 1e-8: ρ = d_opt / d_ref ≤ ρ_max,
              with d_opt = max|o32 − r64|;
  'exact'     else (exact ops: max, argmax, sort): d_opt / max(max|r32|, 1e-12) ≤ 1e-4;
  'tf32'      policy 'tf32' only, when the rule above failed:
              d_opt ≤ max(5e-3, 1e-3 · max|r32|).
Integer and bool leaves (argmax indices) must equal r32 exactly, or r64 exactly
(where fp32 eager itself broke a near-tie differently from the float64 truth).
ρ is computed and logged whenever r64 is available, also for accepted candidates.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence, Union

import torch

from kernelopt.core.compare import bits, compare_close, compare_exact
from kernelopt.core.precision import PrecisionPolicy
from kernelopt.core.tolerance import Dtype, gate3_tolerance
from kernelopt.verify.result import GateName, GateResult

GATE: GateName = "gate3"
EXACT_D_REF = 1e-8  # below this, the reference is exact: ρ would divide by ~0
EXACT_REL = 1e-4
TF32_ABS, TF32_REL = 5e-3, 1e-3

R64 = Union[Sequence[torch.Tensor], Callable[[], Sequence[torch.Tensor]], None]


def _f64(t: torch.Tensor) -> torch.Tensor:
    # Stays on the tensor's device: on the CPU, float64 passes over 10^8-element
    # outputs cost seconds each, and Gate 3 makes several per seed.
    return t.detach().to(torch.float64).reshape(-1)


def _max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """max |a − b| in float64; equal values (incl. equal infinities) count 0, NaN on one side inf."""
    a, b = _f64(a), _f64(b).to(a.device)
    same = (a == b) | (a.isnan() & b.isnan())
    diff = torch.where(same, torch.zeros_like(a), (a - b).abs())
    return float(torch.nan_to_num(diff, nan=float("inf")).max()) if diff.numel() else 0.0


def fallback_dists(r32: torch.Tensor, o32: torch.Tensor, r64: torch.Tensor) -> tuple[float, float]:
    """(max|r32 − r64|, max|o32 − r64|) where r32 and r64 are finite.

    Elsewhere (fp32 eager overflowed, or the model itself yields inf/NaN) o32
    must reproduce r32 or r64 exactly, else d_opt is inf: one NaN in eager must
    not make d_ref infinite and so ρ zero for any candidate.
    """
    r, o, t = _f64(r32), _f64(o32).to(r32.device), _f64(r64).to(r32.device)
    valid = torch.isfinite(r) & torch.isfinite(t)
    d_ref = float((r - t).abs()[valid].max()) if bool(valid.any()) else 0.0
    d_opt = float(torch.nan_to_num((o - t).abs()[valid], nan=float("inf")).max()) if bool(valid.any()) else 0.0
    same = lambda a, b: (a == b) | (a.isnan() & b.isnan())  # noqa: E731
    if not bool((same(o, r) | same(o, t))[~valid].all()):
        d_opt = float("inf")
    return d_ref, d_opt


def _max_abs(ts: Sequence[torch.Tensor]) -> float:
    vals = [float(_f64(t).abs().nan_to_num(nan=0.0, posinf=0.0, neginf=0.0).max())
            for t in ts if t.is_floating_point() and t.numel()]
    return max(vals, default=0.0)


def _exact_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(bits(a), bits(b.to(a.device)))


def check_model(r32: Sequence[torch.Tensor], o32: Sequence[torch.Tensor], r64: R64,
                policy: Union[str, PrecisionPolicy] = "strict", rho_max: float = 10.0,
                require_float64: bool = False, dtype: Union[str, Dtype] = Dtype.FP32,
                float64_unavailable: Optional[str] = None) -> GateResult:
    """`require_float64`: decide by the float64 test even where allclose passes
    (an emulated-fp32 candidate under `strict`: verify.precision.strict_verdict).
    `dtype`: the job's dtype, which sets the allclose tolerance (core.tolerance).
    `float64_unavailable`: why the harness could not compute r64 (then None). A verdict that needs the
    float64 test then fails with `harness_error` set: not the candidate's failure, the harness's (the job's
    cause says so: pipeline/gates.py); one that allclose decides stands, with the reason in the metrics."""
    policy = PrecisionPolicy.parse(policy)
    tol = gate3_tolerance(dtype)
    m: dict = {"policy": policy.value, "branch": "allclose", "d_ref": None, "d_opt": None, "rho": None,
               "dtype": Dtype.parse(dtype).value, "rtol": tol.rtol, "atol": tol.atol}
    if len(r32) != len(o32):
        return GateResult.fail(GATE, f"the candidate returned {len(o32)} outputs, eager {len(r32)}", **m)
    for i, (r, o) in enumerate(zip(r32, o32, strict=True)):
        if r.shape != o.shape or r.dtype != o.dtype:
            return GateResult.fail(GATE, f"output {i}: {o.dtype}{list(o.shape)} where eager gives "
                                   f"{r.dtype}{list(r.shape)}", **m)
    floats = [i for i, r in enumerate(r32) if r.is_floating_point()]
    ints = [i for i in range(len(r32)) if i not in floats]

    mismatch = None  # first allclose failure, as feedback text
    for i in floats:
        mismatch = mismatch or compare_close(o32[i], r32[i], tol.rtol, tol.atol, f"output {i}")
    m["allclose_max_abs_err"] = max((_max_abs_diff(o32[i], r32[i]) for i in floats), default=0.0)
    bad_ints = [i for i in ints if not _exact_equal(o32[i], r32[i])]

    need_r64 = mismatch is not None or bool(bad_ints)
    if r64 is None and float64_unavailable is not None:
        m["gate3_float64_unavailable"] = float64_unavailable
        if need_r64 or require_float64:
            why = (mismatch or (_int_message(bad_ints[0], o32, r32) if bad_ints else None)
                   or "an emulated-fp32 candidate is judged by the float64 test only")
            m["harness_error"] = True
            return GateResult.fail(GATE, f"Gate 3 could not decide: {why} (allclose {tol.text()}), and the float64 "
                                   f"reference that decides then could not be computed: {float64_unavailable}", **m)
    ref64 = None
    if r64 is not None:
        ref64 = list(r64() if callable(r64) else r64)  # lazily: costs a float64 eager run
        if len(ref64) != len(r32) or any(a.shape != b.shape for a, b in zip(ref64, r32, strict=True)):
            return GateResult.fail(GATE, "the float64 reference's outputs do not match eager fp32's in number "
                                   f"or shape ({[list(t.shape) for t in ref64]} vs {[list(t.shape) for t in r32]})", **m)
    elif need_r64:
        m["branch"] = "exact" if bad_ints and mismatch is None else "allclose"
        first = mismatch or _int_message(bad_ints[0], o32, r32)
        return GateResult.fail(GATE, f"{first} (allclose {tol.text()}; no float64 reference to fall back on)", **m)

    max_r32 = _max_abs([r32[i] for i in floats])
    m["max_abs_r32"] = max_r32
    if ref64 is not None:
        dists = [fallback_dists(r32[i], o32[i], ref64[i]) for i in floats]
        d_ref = max((d[0] for d in dists), default=0.0)
        d_opt = max((d[1] for d in dists), default=0.0)
        m.update(d_ref=d_ref, d_opt=d_opt, rho=(d_opt / d_ref) if d_ref > 0 else None)
        via_r64 = bool(bad_ints)
        bad_ints = [i for i in bad_ints if not _exact_equal(o32[i], ref64[i].to(o32[i].dtype))]
        if via_r64 and not bad_ints:  # exact outputs agree with float64 where fp32 eager broke a near-tie
            m["branch"], m["int_outputs_match"] = "exact", "r64"

    if bad_ints:  # exact outputs admit no tolerance, under any policy
        m["branch"] = "exact"
        return GateResult.fail(GATE, _int_message(bad_ints[0], o32, r32) + " (integer outputs must match exactly)", **m)
    if mismatch is None and not (require_float64 and ref64 is not None):
        rho = f", ρ = {m['rho']:.3g}" if m["rho"] is not None else ""
        ints_note = "; integer outputs equal the float64 reference's" if m.get("int_outputs_match") else ""
        return GateResult.ok(GATE, f"allclose to eager ({tol.text()}){rho}{ints_note}", **m)

    d_ref, d_opt = m["d_ref"], m["d_opt"]
    if d_ref >= EXACT_D_REF:
        m["branch"] = "rho"
        passed = m["rho"] <= rho_max
        verdict = f"ρ = d_opt/d_ref = {d_opt:.3g}/{d_ref:.3g} = {m['rho']:.3g} {'≤' if passed else '>'} ρ_max {rho_max:g}"
    else:
        m["branch"] = "exact"
        rel = d_opt / max(max_r32, 1e-12)
        passed = rel <= EXACT_REL
        verdict = (f"exact reference (d_ref = {d_ref:.3g} < 1e-8): d_opt/max|r32| = {rel:.3g} "
                   f"{'≤' if passed else '>'} 1e-4")
    why = f" (allclose {tol.text()} failed: {mismatch})" if mismatch else " (emulated fp32: float64 test required)"
    if not passed and policy is PrecisionPolicy.TF32:
        bound = max(TF32_ABS, TF32_REL * max_r32)
        if d_opt <= bound:
            m["branch"] = "tf32"
            return GateResult.ok(GATE, f"accepted under the tf32 policy: d_opt {d_opt:.3g} ≤ "
                                 f"max(5e-3, 1e-3·max|r32|) = {bound:.3g}; float64 fallback: {verdict}{why}", **m)
    text = f"float64 fallback: {verdict}{why}"
    return GateResult.ok(GATE, text, **m) if passed else GateResult.fail(GATE, text, **m)


def _int_message(i: int, o32: Sequence[torch.Tensor], r32: Sequence[torch.Tensor]) -> str:
    return compare_exact(o32[i], r32[i], f"output {i}") or f"output {i} differs"
