"""Stage 5, deterministic: which kernels are worth searching, and why not the others.

GPU time is the scarce resource, so a kernel is searched only if making it
infinitely fast could clear the performance gate by Amdahl's law:
the model speedup from a kernel of time share s is at most 1 / (1 - s), which
must reach gamma (plus the measured noise).
"""
from __future__ import annotations

from dataclasses import dataclass

from profiling.baseline import BaselineProfile

SEARCHABLE_KINDS = ("pointwise", "reduction", "persistent")


@dataclass
class TargetDecision:
    name: str
    kind: str
    share: float
    searched: bool
    reason: str
    tier: str = "unprofiled"  # near-optimal | memory-bound | compute-bound | underutilized (with ncu)


def amdahl_ceiling(share: float) -> float:
    return float("inf") if share >= 1.0 else 1.0 / (1.0 - share)


def min_share(gamma: float, noise_pct: float = 0.0) -> float:
    """Smallest time share whose removal would clear gamma beyond the noise."""
    need = gamma * (1.0 + noise_pct / 100.0)
    return 1.0 - 1.0 / need


def required_kernel_speedup(share: float, gamma: float) -> float:
    """Kernel speedup k that lifts the model by gamma: 1 / (1 - s + s/k) = gamma.

    Candidates below it cannot pass Gate 4, so they are not sent to the
    (expensive, whole-model) verification at all.
    """
    denom = 1.0 / gamma - 1.0 + share
    return float("inf") if denom <= 0 else share / denom


def plan_targets(kernels: dict[str, str], profile: BaselineProfile, gamma: float,
                 searchable_kinds: tuple[str, ...] = SEARCHABLE_KINDS) -> list[TargetDecision]:
    """One decision per Triton kernel (`kernels`: name -> kind), largest share first."""
    threshold = min_share(gamma, profile.noise_pct)
    decisions = []
    for name, kind in kernels.items():
        share = profile.share_of(name)
        if kind not in searchable_kinds:
            d = TargetDecision(name, kind, share, False, f"no generator handles {kind} kernels yet")
        elif share < threshold:
            d = TargetDecision(name, kind, share, False,
                               f"too small to clear gamma={gamma}: {share:.1%} of GPU time, "
                               f"Amdahl ceiling {amdahl_ceiling(share):.3f}x < {gamma * (1 + profile.noise_pct / 100):.3f}x")
        else:
            d = TargetDecision(name, kind, share, True, f"{share:.1%} of GPU time")
        decisions.append(d)
    return sorted(decisions, key=lambda d: -d.share)


def fallback_cause(profile: BaselineProfile, decisions: list[TargetDecision], gamma: float) -> str | None:
    """The job-level reason not to search at all, as "<code>: <explanation>", or None."""
    if not decisions:
        return "no-triton-kernels: the compiled model is library calls only"
    if profile.triton_share < min_share(gamma, profile.noise_pct) and profile.library_share > 0.5:
        return (f"library-dominated: {profile.library_share:.1%} of GPU time in vendor libraries, "
                f"Triton kernels {profile.triton_share:.1%}")
    if not any(d.searched for d in decisions):
        return ("too-small-share: every Triton kernel is too small a share of the model to clear the "
                "performance gate (Amdahl)")
    return None
