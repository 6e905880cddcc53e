"""Stage 6: beam search over candidates from pluggable generators (docs/architecture.md, Search).

Generic over generators (the built-in launch-config expansion, LLM agents)
and over the evaluator (Gates 1-2 and timing, usually in a child process):
this module only decides what to ask for next and what to keep.

Paper semantics: T iterations; each iteration every active chain gets
max(1, N // chains) proposals; only Gate-1/2-passing, timed candidates enter
the beam; DiverseSelect keeps each chain's best, then fills the remaining
slots by global latency; a meltdown detector tells the generators to
diversify when recent plans keep making the same kind of move, and stops a
chain whose last `meltdown_failures` attempts all failed (a chain that keeps
failing is stopped). A candidate whose normalized source
(search.fingerprint) was seen before is recorded with gate `duplicate` and
never evaluated again.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, Literal, Optional, Protocol

from kernelopt.core.jobfiles import PlantedFile
from kernelopt.search.fingerprint import fingerprint
from kernelopt.search.generator import Attempt, Candidate, CandidateGenerator, Gate, KernelTarget
from kernelopt.search.registry import applicable
from kernelopt.verify.gate1_source import static_refusal

log = logging.getLogger(__name__)

MAX_GENERATOR_FAILURES = 2  # a chain whose generator raised this often is retired

# Why a chain stopped before the search did (SearchResult.stopped_chains).
ChainStop = Literal["meltdown", "generator-errors"]


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
    # A chain whose last this-many attempts all failed (gates, no code, duplicates) is stopped; 0: never.
    meltdown_failures: int = 8


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
    generator_errors: list[str] = field(default_factory=list)  # "generator: Type: message", each failed propose()
    # chains stopped early: {"chain", "generator", "reason": ChainStop, "iteration", "consecutive_failures"}
    stopped_chains: list[dict] = field(default_factory=list)


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
    With a planner's strategy label (params["strategy"]): the generator and that label.
    Without: the generator and the first word of the description (an LLM plan's verb).
    """
    params = candidate.params or {}
    if params.get("strategy"):
        return f"{candidate.generator}:{params['strategy']}"
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


def _duplicate(cand: Candidate, first: Candidate, verdicts: dict[str, Attempt]) -> Attempt:
    """The attempt recorded for a candidate whose normalized source was seen before (never run)."""
    known = verdicts.get(first.id)
    if known is None:
        verdict = "proposed in this same iteration"
    elif known.passed:
        verdict = f"it passed Gates 1-2 ({known.kernel_ms:.4f} ms)" if known.kernel_ms else "it passed Gates 1-2"
    else:
        verdict = f"it was rejected at {known.gate}"
    return Attempt(cand, False, Gate.DUPLICATE,
                   f"this candidate is the same program as candidate {first.id} (identical after removing "
                   f"comments, layout and local variable names; {verdict}); it was not run again. Propose a "
                   "different change.", metrics={"duplicate_of": first.id})


def search_kernel(target: KernelTarget, generators: list[CandidateGenerator], evaluator: Evaluator,
                  config: SearchConfig, on_attempt: Callable[[Attempt], None] | None = None,
                  should_stop: Callable[[], bool] | None = None,
                  on_chain_stop: Callable[[dict], None] | None = None) -> SearchResult:
    """Beam search for faster versions of one kernel; never raises for a generator's failure.

    `on_chain_stop` is told of each chain stopped early (the job's trajectory records it).
    """
    notes: list[str] = []
    generator_errors: list[str] = []
    usable = []
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
    seen_ids: set[str] = set()  # exact sources: a generator re-proposing one is exhausted
    by_print: dict[str, Candidate] = {}  # normalized source -> the first candidate with it
    verdicts: dict[str, Attempt] = {}
    stopped_chains: list[dict] = []
    streak: dict[int, int] = {c: 0 for c in chains}  # consecutive failed attempts per chain
    beam: list[Attempt] = []
    diversified: list[int] = []
    diversify = False  # set by the meltdown detector after each iteration
    baseline_params = _flat_config(target.baseline_config)
    failures: dict[int, int] = {c: 0 for c in chains}
    stopped = "iterations"
    iterations_run = 0

    while iterations_run < config.iterations:
        remaining = config.max_candidates - _measured(attempts)
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
            except PlantedFile:  # a child left a link where the job keeps a file (the LLM's transcripts.jsonl):
                raise  # no generator's failure, the job's end (pipeline/job.py says so)
            except Exception as exc:  # noqa: BLE001 - one generator's failure must not end the search
                log.exception("generator %s failed on %s", gen.name, target.name)
                notes.append(f"iteration {iterations_run}: {gen.name} (chain {chain}) failed: "
                             f"{type(exc).__name__}: {exc}")
                generator_errors.append(f"{gen.name}: {type(exc).__name__}: {exc}")
                failures[chain] += 1
                if failures[chain] >= MAX_GENERATOR_FAILURES:
                    active.discard(chain)
                    stopped_chains.append(_stop(chain, gen, "generator-errors", iterations_run, failures[chain],
                                                on_chain_stop))
                continue
            fresh = []
            for cand in proposed:
                # An LLM may send back an earlier candidate verbatim: recorded as a duplicate (its
                # conversation hears so). A built-in generator re-proposing one is out of ideas.
                if cand.id in seen_ids and not _hears_duplicates(gen):
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

        dups: dict[int, Attempt] = {}
        for i, c in enumerate(batch):
            if c.rejected:
                continue
            fp = fingerprint(c.source)
            if fp in by_print:
                dups[i] = _duplicate(c, by_print[fp], verdicts)
            else:
                by_print[fp] = c
        refused = {i: Attempt(c, False, Gate.GATE1, why, metrics={"stage": "static"}) for i, c in enumerate(batch)
                   if not c.rejected and i not in dups and (why := static_refusal(c.source))}
        to_gates = [c for i, c in enumerate(batch) if not c.rejected and i not in dups and i not in refused]
        gated = iter(evaluator.evaluate(to_gates) if to_gates else [])
        results = [Attempt(c, False, Gate.EXTRACT, c.rejected) if c.rejected
                   else dups.get(i) or refused.get(i) or next(gated) for i, c in enumerate(batch)]
        for a in results:
            verdicts.setdefault(a.candidate.id, a)
            attempts.append(a)
            params_by_id[a.candidate.id] = dict(a.candidate.params or {})
            parent = params_by_id.get(a.candidate.parent) if a.candidate.parent else baseline_params or None
            directions.append(plan_direction(a.candidate, parent))
            if on_attempt is not None:
                on_attempt(a)
        beam = diverse_select(beam + list(results), config.beam_width)
        for a in results:
            chain = a.candidate.chain
            streak[chain] = 0 if a.passed else streak.get(chain, 0) + 1
        for chain in sorted(active):
            if config.meltdown_failures and streak.get(chain, 0) >= config.meltdown_failures:
                # A chain that keeps failing burns LLM calls and gate runs: stopped, and said so.
                active.discard(chain)
                stopped_chains.append(_stop(chain, chains[chain], "meltdown", iterations_run, streak[chain],
                                            on_chain_stop))
                notes.append(f"iteration {iterations_run}: chain {chain} ({chains[chain].name}) stopped: "
                             f"{streak[chain]} failed attempts in a row (meltdown)")
        if diversify:
            diversified.append(iterations_run)
        iterations_run += 1
        diversify = _meltdown(directions, config)
        if _measured(attempts) >= config.max_candidates:
            stopped = "budget"
            break

    ranked = sorted((a for a in attempts if a.passed), key=latency)
    return SearchResult(target.name, ranked, attempts, stopped, beam, iterations_run, diversified, notes,
                        generator_errors, stopped_chains)


def _measured(attempts: list[Attempt]) -> int:
    """Attempts that count against the candidate budget: duplicates cost no gate run."""
    return sum(a.gate != Gate.DUPLICATE for a in attempts)


def _stop(chain: int, gen: CandidateGenerator, reason: ChainStop, iteration: int, failures: int,
          on_chain_stop: Callable[[dict], None] | None) -> dict:
    stop = {"chain": chain, "generator": gen.name, "reason": reason, "iteration": iteration,
            "consecutive_failures": failures}
    if on_chain_stop is not None:
        on_chain_stop(stop)
    return stop


def _hears_duplicates(gen: CandidateGenerator) -> bool:
    """Whether a generator is told its duplicates (a conversation: the LLM agents)."""
    return bool(getattr(gen, "hears_duplicates", False))
