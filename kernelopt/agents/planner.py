"""The planner agent (docs/agents.md): one plan per call, for the executor to implement.

Its prompt (agents/prompts/planner_*.md) holds the kernel's current source, its
dispatch context (the library calls launched around it, model jobs), Nsight
Compute's figures and the roofline bound where the profile has them, the job's
experience memory (agents/memory.py), the team's AVOID list with its provenance,
and a direction per search chain, so that parallel chains explore different
kinds of change (DiverseSelect then keeps each chain's best). The reply is a
strategy label from a fixed vocabulary — the unit the team's AVOID list counts —
and a short plan.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernelopt.agents.templates import prompt
from kernelopt.search.generator import KernelTarget

if TYPE_CHECKING:
    from kernelopt.agents.llm import LLMClient

# The labels a plan is filed under (AVOID counts per label, across jobs: a fixed list keeps them comparable).
STRATEGIES = ("block-sizes", "warps-and-stages", "vectorized-access", "memory-coalescing", "loop-tiling",
              "persistent-kernel", "operation-fusion", "recomputation", "reduction-restructure",
              "algorithmic-rewrite", "other")
# One direction per chain, so parallel chains do not all make the same move first.
CHAIN_FOCUS = (
    "Focus on memory traffic: fewer or wider loads and stores, better coalescing, reuse of loaded data.",
    "Focus on parallelism: how work is split over programs, block sizes, warps and pipelining stages.",
    "Focus on the algorithm: restructure the loops or the reduction so less work or fewer passes are needed.",
    "Focus on on-chip resources: registers, shared memory, keeping intermediates on chip.",
)
_STRATEGY = re.compile(r"^\s*\**\s*STRATEGY\s*\**\s*:\s*(.+)$", re.I | re.M)
_PLAN = re.compile(r"^\s*\**\s*PLAN\s*\**\s*:\s*", re.I | re.M)


@dataclass
class Plan:
    plan_id: str
    strategy: str
    text: str
    call: int  # the LLM call that made it (transcripts.jsonl)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    avoided: bool = False  # the planner chose a strategy on the team's AVOID list anyway


def parse_plan(reply: str) -> tuple[str, str]:
    """(strategy label, plan text) from a planner reply; "other" when it names none of STRATEGIES."""
    m = _STRATEGY.search(reply or "")
    label = re.sub(r"[^a-z0-9]+", "-", m.group(1).lower()).strip("-") if m else ""
    strategy = label if label in STRATEGIES else next((s for s in STRATEGIES if label.startswith(s)), "other")
    p = _PLAN.search(reply or "")
    text = reply[p.end():] if p else _STRATEGY.sub("", reply or "")
    return strategy, " ".join(text.split())[:1200] or "(no plan text)"


def dispatch_context(target: KernelTarget) -> str:
    if target.kind == "kernel-file":
        return "A standalone kernel file: no library calls around it."
    d = target.profile.get("dispatch") or {}
    before, after = d.get("before") or [], d.get("after") or []
    if not before and not after:
        return "No vendor-library calls next to it in the compiled model."
    return (f"In the compiled model, library calls before it: {', '.join(before) or 'none'}; after it: "
            f"{', '.join(after) or 'none'}. They are kept as they are: only this kernel changes.")


def profile_context(target: KernelTarget) -> str:
    p = target.profile or {}
    lines = []
    if p.get("share") is not None:
        lines.append(f"- share of the model's GPU time: {100 * float(p['share']):.1f}%")
    if p.get("roofline_fraction") is not None:
        lines.append(f"- roofline: achieves {100 * float(p['roofline_fraction']):.0f}% of the measured memory "
                     "bandwidth" + (f"; at the roofline the model would be {p['roofline_ceiling']:.3f}x faster"
                                    if p.get("roofline_ceiling") else ""))
    if p.get("tier"):
        lines.append(f"- tier: {p['tier']}")
    ncu = p.get("ncu") or {}
    keys = ("duration_ms", "compute_sol_pct", "memory_sol_pct", "dram_sol_pct", "registers",
            "achieved_occupancy_pct", "theoretical_occupancy_pct", "shared_mem_bytes", "block_size", "grid_size")
    figures = [f"{k}={ncu[k]}" for k in keys if ncu.get(k) not in (None, "")]
    if figures:
        lines.append("- Nsight Compute: " + ", ".join(figures))
    for rule in (ncu.get("rules") or [])[:3]:
        if isinstance(rule, dict):
            lines.append(f"- ncu rule {rule.get('name', '')}: {str(rule.get('message', ''))[:200]} "
                         f"(estimated speedup {rule.get('estimated_speedup_pct', '?')}%)")
    return "\n".join(lines) or "No profile figures for this kernel (no GPU profile or no Nsight Compute)."


def avoid_context(avoid: list[dict]) -> str:
    if not avoid:
        return "None: no strategy has a poor record on this team's earlier jobs."
    lines = ["These strategies succeeded in under 30% of at least 3 attempts on this team's earlier jobs; "
             "choose another unless the kernel is clearly different:"]
    for a in avoid:
        jobs = ", ".join(str(j) for j in (a.get("jobs") or [])[:5])
        lines.append(f"- AVOID {a['strategy']}: {a.get('successes', 0)} of {a.get('attempts', 0)} attempts "
                     f"succeeded" + (f" (jobs {jobs})" if jobs else ""))
    return "\n".join(lines)


class Planner:
    def __init__(self, client: "LLMClient"):
        self.client = client
        self._plans = 0

    def plan(self, target: KernelTarget, *, kind: str, source: str, chain: int, memory: str,
             avoid: list[dict], recent_strategies: list[str], diversify: bool) -> Plan:
        focus = CHAIN_FOCUS[chain % len(CHAIN_FOCUS)]
        if diversify:
            tried = ", ".join(dict.fromkeys(recent_strategies)) or "the same kind of change"
            focus += (f" Recent plans kept to the same few approaches ({tried}): choose a substantially "
                      "different strategy.")
        messages = [{"role": "system", "content": prompt("planner_system")},
                    {"role": "user", "content": prompt(
                        "planner_task", kind=kind, source=source, dispatch=dispatch_context(target),
                        profile=profile_context(target), memory=memory, avoid=avoid_context(avoid), focus=focus,
                        strategies=", ".join(STRATEGIES))}]
        reply = self.client.chat(messages, agent="planner", meta={"target": target.name, "chain": chain})
        strategy, text = parse_plan(reply.content)
        self._plans += 1
        avoided = strategy in {a.get("strategy") for a in avoid}
        return Plan(f"{target.name}:{chain}:{self._plans}", strategy, text, reply.call, reply.prompt_tokens,
                    reply.completion_tokens, avoided)

