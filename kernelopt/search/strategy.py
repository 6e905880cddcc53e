"""Stage 5, deterministic: which kernels are worth searching, and why not the others.

GPU time is the scarce resource, so a kernel is searched only if a faster
version could clear the performance gate, by Amdahl's law:
- too small a share: even an infinitely fast kernel of time share s lifts the
  model by at most 1 / (1 - s), short of gamma (plus the measured noise);
- near-optimal: a memory-bound kernel that already runs at a fraction f of the
  device's measured bandwidth can get at most 1/f faster, which lifts the model
  by at most 1 / (1 - s + s·f) (profiling.roofline). Where f is unknown, or
  above 1 (the byte count does not describe the kernel), nothing is decided
  from it.

The product spec calls a kernel near-optimal above 80% of speed-of-light
(docs/architecture.md, Differences from the product spec). We skip on
the ceiling instead: on the H200 a layer norm at ~95% of the measured bandwidth
still gave a verified 1.033x, which an 80% cut would have thrown away.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Optional, Sequence

from kernelopt.profiling.baseline import BaselineProfile
from kernelopt.profiling.roofline import model_ceiling
from kernelopt.search.registry import default_generators, kernel_kind_reason, target_kind_reason

# A kernel measured a little faster than the bandwidth probe (copy or read over 1 GiB) is at the roofline,
# not unprofiled: on the H200 the 12 GiB leaky_relu kernel measured 0.99x in one run (skipped) and 1.012x in
# the next (searched: 20 candidates, none faster). Farther above, the byte count itself is doubtful: no decision.
ABOVE_ROOFLINE_TOLERANCE = 1.05


#: why a target is not searched: Amdahl's law (`too-small`, `near-optimal`), no generator of the job for its kind
#: (`no-generator`), or a group whose generators all decline it (`declined`: its Triton kernels are weighed as
#: kernels), or a group that cannot be re-stitched (`not-restitchable`)
Skip = Literal["too-small", "near-optimal", "no-generator", "declined", "not-restitchable"]


@dataclass
class TargetDecision:
    name: str
    kind: str
    share: float
    searched: bool
    reason: str
    tier: str = "unprofiled"  # near-optimal | memory-bound (roofline measured) | unprofiled
    roofline_fraction: float | None = None  # achieved / measured bandwidth
    roofline_ceiling: float | None = None  # model speedup if this kernel ran at the roofline
    ncu: dict | None = None  # Nsight Compute's figures for this kernel (profiling.ncu.NcuKernel), when profiled
    skip: Skip | None = None  # why it is not searched (None where it is)


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
                 generators: Sequence[str] | None = None) -> list[TargetDecision]:
    """One decision per Triton kernel (`kernels`: name -> kind), largest share first.

    `generators`: the job's generator names (default: the registry's defaults); a kernel
    whose kind none of them declares (search.registry, `kernel_kinds`) is not searched.
    """
    names = list(default_generators() if generators is None else generators)
    threshold = min_share(gamma, profile.noise_pct)
    need = gamma * (1 + profile.noise_pct / 100)
    decisions = []
    for name, kind in kernels.items():
        share = profile.share_of(name)
        measured = profile.kernel(name)
        fraction = measured.roofline_fraction if measured is not None else None
        usable = fraction is not None and 0 < fraction <= ABOVE_ROOFLINE_TOLERANCE
        tier = "memory-bound" if usable else "unprofiled"
        ceiling = model_ceiling(share, min(fraction, 1.0)) if usable and fraction is not None else None
        unhandled = kernel_kind_reason(names, kind)
        skip: Skip | None = None
        if unhandled:
            skip, reason = "no-generator", unhandled
        elif share < threshold:
            skip, reason = "too-small", (f"too small to clear gamma={gamma}: {share:.1%} of GPU time, "
                                         f"Amdahl ceiling {amdahl_ceiling(share):.3f}x < {need:.3f}x")
        elif ceiling is not None and ceiling < need:
            skip, reason = "near-optimal", (f"near-optimal: runs at {fraction:.1%} of the measured bandwidth; at "
                                            f"the roofline the model would gain at most {ceiling:.3f}x < {need:.3f}x")
            tier = "near-optimal"
        else:
            at = f", {fraction:.1%} of the measured bandwidth" if usable else ""
            reason = f"{share:.1%} of GPU time{at}"
        decisions.append(TargetDecision(name, kind, share, skip is None, reason, tier,
                                        roofline_fraction=fraction, roofline_ceiling=ceiling, skip=skip))
    return sorted(decisions, key=lambda d: -d.share)


def plan_groups(groups: list, profile: BaselineProfile, gamma: float,
                generators: Sequence[str] | None = None,
                declines: Optional[Callable[[Any], Optional[str]]] = None) -> list[TargetDecision]:
    """One decision per library group or kernel chain (compiled.group.LibraryGroup), largest share first.

    A group's share is its Triton kernels' shares plus its library call's own, timed
    from that call's launch (profiling.library_calls); a template anchor is one of the
    Triton kernels. Where the calls were not timed one by one (the profile's
    `library_calls` empty), the profile names only the vendor library's kernels, not
    the calls that launched them, and the whole library share is the group's upper
    bound: a bound never skips a group that could clear gamma; the search then
    measures the group's own time (Gate 2's timing) against the model's, and Gate 4
    decides. A kernel chain's share is its kernels' own; it is
    searched only where a generator of the job fuses chains (`generators`, the
    job's; the defaults where not given): no other generator applies to one.

    `declines(group)`: why no generator of the job applies to the group (None when one
    does): such a group is not a target (a convolution under the default generators,
    a bf16 GEMM under fp32-only ones), and its time is not lost: its Triton kernels are
    targets of the kernel generators (plan_targets), each by its own share.
    """
    threshold = min_share(gamma, profile.noise_pct)
    need = gamma * (1 + profile.noise_pct / 100)
    names = list(generators) if generators is not None else default_generators()
    out = []
    for g in groups:
        triton = sum(profile.share_of(k) for k in g.kernels)
        own = profile.call_share(g.anchor) if g.anchor_kind == "library" else 0.0
        share = min(1.0, triton + (profile.library_share if own is None else own))
        kind = f"group:{g.op}"
        chain = g.anchor_kind == "triton"
        unhandled = target_kind_reason(names, "chain") if chain else None
        what = "kernel chain" if chain else "library group"
        declined = declines(g) if declines is not None and not g.reason and not unhandled else None
        if g.reason:
            d = TargetDecision(g.name, kind, share, False, f"{what} not re-stitchable: {g.reason}",
                               skip="not-restitchable")
        elif unhandled:
            d = TargetDecision(g.name, kind, share, False, unhandled, skip="no-generator")
        elif declined:
            kernels = g.kernels[1:] if g.anchor_kind == "library" else g.kernels
            d = TargetDecision(g.name, kind, share, False,
                               f"no generator of this job applies to this {what} ({declined}); its {len(kernels)} "
                               "Triton kernel(s) are searched as kernels where their own share can clear gamma",
                               skip="declined")
        elif share < threshold:
            d = TargetDecision(g.name, kind, share, False, f"too small to clear gamma={gamma}: at most {share:.1%} "
                               f"of GPU time, Amdahl ceiling {amdahl_ceiling(share):.3f}x < {need:.3f}x",
                               skip="too-small")
        elif chain:
            d = TargetDecision(g.name, kind, share, True, f"kernel chain of {len(g.kernels)} adjacent Triton kernels "
                               f"({len(g.dropped)} intermediate(s) a fused kernel keeps on chip): {share:.1%} of GPU "
                               "time")
        else:
            d = TargetDecision(g.name, kind, share, True, f"library group {g.op} + {len(g.kernels) - 1} epilogue "
                               f"kernel(s): at most {share:.1%} of GPU time")
        out.append(d)
    return sorted(out, key=lambda d: -d.share)


def fallback_cause(profile: BaselineProfile, decisions: list[TargetDecision], gamma: float) -> str | None:
    """The job-level reason not to search at all, as "<code>: <explanation>", or None.

    A searched library group (plan_groups) means the library calls are a target:
    then `library-dominated` is no reason to stop.
    """
    if not decisions:
        return "no-triton-kernels: the compiled model is library calls only"
    groups_searched = any(d.searched and d.kind.startswith("group:") for d in decisions)
    if profile.triton_share < min_share(gamma, profile.noise_pct) and profile.library_share > 0.5 \
            and not groups_searched:
        return (f"library-dominated: {profile.library_share:.1%} of GPU time in vendor libraries, "
                f"Triton kernels {profile.triton_share:.1%}")
    if not any(d.searched for d in decisions):
        amdahl = [d for d in decisions if d.skip in ("too-small", "near-optimal")]
        if not amdahl:  # nothing was skipped for its share: no generator of the job works on any target
            tried = "; ".join(f"{d.name}: {d.reason}" for d in sorted(decisions, key=lambda d: -d.share)[:3])
            more = f" (and {len(decisions) - 3} more)" if len(decisions) > 3 else ""
            return f"no-candidates: no generator of this job applies to any target; {tried}{more}"
        declined = [d.name for d in decisions if d.skip == "declined"]
        also = (f"; no generator of this job applies to {len(declined)} library group(s)/chain(s) "
                f"({', '.join(declined[:3])}), whose Triton kernels were weighed as kernels") if declined else ""
        if any(d.tier == "near-optimal" for d in decisions):
            return ("near-optimal: no Triton kernel can lift the model by gamma: the large ones already run "
                    "near the measured memory roofline, the others are too small a share (Amdahl)" + also)
        return ("too-small-share: every Triton kernel is too small a share of the model to clear the "
                "performance gate (Amdahl)" + also)
    return None


def apply_ncu(decisions: list[TargetDecision], ncu_kernels: dict[str, dict]) -> None:
    """Nsight Compute's tier (docs/architecture.md, 4. Profile) on each profiled kernel's decision, with its reason.

    The tier is stated and handed to the generators (the planner reads it); it does not
    skip a search by itself: the product spec's "any SOL > 80% is near-optimal" would have skipped
    level1/07_layer_norm (about 95% of the measured bandwidth), where a verified 1.033x was
    found (benchmarks/results/2026-11-30-h200x2-full). The roofline ceiling above decides skips.
    """
    for d in decisions:
        k = ncu_kernels.get(d.name)
        if not k:
            continue
        d.ncu = k
        d.tier = k.get("tier") or d.tier
        d.reason += f"; ncu: {k.get('tier')} ({k.get('tier_reason')})"
