"""Stage 6: beam search over candidates from pluggable generators (SPEC §4).

Generic over generators (the built-in launch-config expansion, LLM agents)
and over the evaluator (Gates 1-2 and timing, usually in a child process):
this module only decides what to ask for next and what to keep.

Paper semantics: T iterations; each iteration every active chain gets
max(1, N // chains) proposals; only Gate-1/2-passing, timed candidates enter
the beam; DiverseSelect keeps each chain's best, then fills the remaining
slots by global latency; a meltdown detector tells the generators to
diversify when recent plans keep making the same kind of move.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol

from kernelopt.search.generator import Attempt, Candidate, CandidateGenerator, KernelTarget

log = logging.getLogger(__name__)

MAX_GENERATOR_FAILURES = 2  # a chain whose generator raised this often is retired


class Evaluator(Protocol):
    def evaluate(self, candidates: list[Candidate]) -> list[Attempt]:
        """Gate 1, Gate 2, then timing of the passing ones; one Attempt per candidate, in order.

        Batched so one child process can handle many candidates.
        """


@dataclass
class SearchConfig:
    iterations: int = 5  # T
    plans_per_iteration: int = 4  # N, divided over the active chains
    beam_width: int = 4  # B
    max_candidates: int = 24  # total candidate budget for one target kernel
    chains: int = 1  # at least one chain per generator; more chains share generators round-robin
    meltdown_window: int = 6  # look at this many most recent plan directions...
    meltdown_unique: int = 2  # ...and call it a meltdown when they hold at most this many distinct ones


@dataclass
class SearchResult:
    target: str
    ranked: list[Attempt]  # Gate-1/2-passing attempts, fastest first (untimed ones last)
    attempts: list[Attempt]  # every attempt, in evaluation order
    stopped_reason: str  # iterations | budget | exhausted | should_stop | no_generator
    beam: list[Attempt] = field(default_factory=list)  # the final beam
    iterations_run: int = 0
    diversified: list[int] = field(default_factory=list)  # iterations that ran with the diversify hint
    notes: list[str] = field(default_factory=list)  # generator errors and other non-fatal events


class SearchHistory(list):
    """The attempts so far (a plain list to generators), plus hints as attributes.

    The CandidateGenerator protocol is fixed (`propose(target, beam, history,
    budget)`), so hints travel on the history object: generators that know
    them read them with getattr, others see an ordinary list.
    """

    def __init__(self, attempts: list[Attempt], *, diversify: bool = False, chain: int = 0,
                 pending: Optional[list[Candidate]] = None):
        super().__init__(attempts)
        self.diversify = diversify  # the meltdown detector fired: make a different kind of move
        self.chain = chain
        self.pending = list(pending or [])  # proposed this iteration by earlier chains, not yet evaluated


def latency(a: Attempt) -> float:
    return a.kernel_ms if a.kernel_ms is not None else float("inf")


def _beam_eligible(a: Attempt) -> bool:
    # Incorrect candidates never enter the beam (the paper let them in; we do not),
    # nor do untimed ones: the beam is ordered by latency.
    return a.passed and a.kernel_ms is not None


def diverse_select(pool: list[Attempt], width: int) -> list[Attempt]:
    """DiverseSelect: each chain's fastest first, then the fastest of the rest, up to `width`."""
    unique: dict[str, Attempt] = {}
    for a in sorted((a for a in pool if _beam_eligible(a)), key=latency):
        unique.setdefault(a.candidate.id, a)
    ordered = list(unique.values())
    chain_best: dict[int, Attempt] = {}
    for a in ordered:
        chain_best.setdefault(a.candidate.chain, a)
    keep = sorted(chain_best.values(), key=latency)[:width]  # more chains than slots: the fastest chains
    kept = {a.candidate.id for a in keep}
    keep += [a for a in ordered if a.candidate.id not in kept][:max(0, width - len(keep))]
    return sorted(keep, key=latency)


def _flat_config(config: dict) -> dict:
    """{"kwargs": {...}, "num_warps": n, "num_stages": s} -> one flat params dict."""
    if not config:
        return {}
    return {**dict(config.get("kwargs") or {}),
            **{k: config[k] for k in ("num_warps", "num_stages") if k in config}}


def plan_direction(candidate: Candidate, parent_params: Optional[dict]) -> str:
    """What kind of move a plan made, for the meltdown detector.

    With params: the generator and the sorted names of the params that changed
    from the parent (or from the baseline config), e.g. "launch_config:R0_BLOCK+num_warps".
    Without: the generator and the first word of the description (an LLM plan's verb).
    """
    params = candidate.params or {}
    if params and parent_params is not None:
        keys = sorted(set(params) | set(parent_params))
        changed = [k for k in keys if params.get(k) != parent_params.get(k)]
        if changed:
            return f"{candidate.generator}:{'+'.join(changed)}"
    words = candidate.description.split()
    return f"{candidate.generator}:{words[0] if words else ''}"


def _meltdown(directions: list[str], config: SearchConfig) -> bool:
    recent = directions[-config.meltdown_window:]
    return len(recent) >= config.meltdown_window and len(set(recent)) <= config.meltdown_unique


def _chain_beam(beam: list[Attempt], chain: int) -> list[Attempt]:
    """The beam as one chain sees it: its own entries first (fastest first), then the others'."""
    own = [a for a in beam if a.candidate.chain == chain]
    return own + [a for a in beam if a.candidate.chain != chain]


def search_kernel(target: KernelTarget, generators: list[CandidateGenerator], evaluator: Evaluator,
                  config: SearchConfig, on_attempt: Callable[[Attempt], None] | None = None,
                  should_stop: Callable[[], bool] | None = None) -> SearchResult:
    """Beam search for faster versions of one kernel; never raises for a generator's failure."""
    notes: list[str] = []
    usable = []
    from kernelopt.search.registry import applicable

    for g in generators:
        reason = applicable(g, target)
        if reason is None:
            usable.append(g)
        else:
            notes.append(f"{g.name}: not applicable: {reason}")
    if not usable:
        return SearchResult(target.name, [], [], "no_generator", notes=notes)
    n_chains = max(config.chains, len(usable))
    chains = {c: usable[c % len(usable)] for c in range(n_chains)}  # chain id -> its generator
    active = set(chains)
    attempts: list[Attempt] = []
    directions: list[str] = []
    params_by_id: dict[str, dict] = {}
    seen_ids: set[str] = set()
    beam: list[Attempt] = []
    diversified: list[int] = []
    diversify = False  # set by the meltdown detector after each iteration
    baseline_params = _flat_config(target.baseline_config)
    failures: dict[int, int] = {c: 0 for c in chains}
    stopped = "iterations"
    iterations_run = 0

    while iterations_run < config.iterations:
        remaining = config.max_candidates - len(attempts)
        if should_stop and should_stop():
            stopped = "should_stop"
            break
        if remaining <= 0:
            stopped = "budget"
            break
        if not active:
            stopped = "exhausted"
            break
        per_chain = max(1, config.plans_per_iteration // len(active))
        batch: list[Candidate] = []
        for chain in sorted(active):
            budget = min(per_chain, remaining - len(batch))
            if budget <= 0:
                break
            gen = chains[chain]
            history = SearchHistory(attempts, diversify=diversify, chain=chain, pending=batch)
            try:
                proposed = gen.propose(target, _chain_beam(beam, chain), history, budget)
            except Exception as exc:  # noqa: BLE001 - one generator's failure must not end the search
                log.exception("generator %s failed on %s", gen.name, target.name)
                notes.append(f"iteration {iterations_run}: {gen.name} (chain {chain}) failed: "
                             f"{type(exc).__name__}: {exc}")
                failures[chain] += 1
                if failures[chain] >= MAX_GENERATOR_FAILURES:
                    active.discard(chain)
                continue
            fresh = []
            for cand in proposed:
                if cand.id in seen_ids:  # same source as an earlier candidate: its verdict is known
                    continue
                seen_ids.add(cand.id)
                cand.chain = chain
                fresh.append(cand)
                if len(fresh) >= budget:
                    break
            if not fresh:
                active.discard(chain)  # nothing new from this chain: it is done
            batch.extend(fresh)
        if not batch:
            if active:  # only transient generator failures: the iteration is spent, try again
                iterations_run += 1
                continue
            stopped = "exhausted"
            break
        if should_stop and should_stop():
            stopped = "should_stop"
            break

        to_gates = [c for c in batch if not c.rejected]
        gated = iter(evaluator.evaluate(to_gates) if to_gates else [])
        results = [Attempt(c, False, "extract", c.rejected) if c.rejected else next(gated) for c in batch]
        for a in results:
            attempts.append(a)
            params_by_id[a.candidate.id] = dict(a.candidate.params or {})
            parent = params_by_id.get(a.candidate.parent) if a.candidate.parent else baseline_params or None
            directions.append(plan_direction(a.candidate, parent))
            if on_attempt is not None:
                on_attempt(a)
        beam = diverse_select(beam + list(results), config.beam_width)
        if diversify:
            diversified.append(iterations_run)
        iterations_run += 1
        diversify = _meltdown(directions, config)
        if len(attempts) >= config.max_candidates:
            stopped = "budget"
            break

    ranked = sorted((a for a in attempts if a.passed), key=latency)
    return SearchResult(target.name, ranked, attempts, stopped, beam, iterations_run, diversified, notes)
