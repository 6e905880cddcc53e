"""The team's cross-job strategy memory (docs/agents.md): strategy outcomes in, the AVOID list out.

After a job, the worker records what its agents reported (report.json's `agents` and
`llm`): per strategy label, how many plans were tried and how many succeeded, with the
job as provenance, and the job's LLM token counts. Before a job, the worker asks for
the team's AVOID list — strategies with under 30% success after at least 3 attempts,
over all the team's recorded jobs — and hands it to the engine as plain data. The
list is computed from the rows each time, never stored as a verdict, so it always
names the jobs it rests on and changes as soon as a strategy starts working.

report.json is written in a directory sandboxed code could also write: everything read
from it is checked (known strategy labels, bounded non-negative integers) before it is
stored, and it only ever concerns the job's own team.
"""
from __future__ import annotations

import math
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from kernelopt.agents.planner import STRATEGIES
from kernelopt.storage.models import Job, StrategyOutcome

AVOID_BELOW = 0.30  # success rate under which a strategy is avoided...
AVOID_MIN_ATTEMPTS = 3  # ...once it has been tried this often
PROVENANCE_JOBS = 5  # jobs named with each AVOID entry (the latest)
MAX_COUNT = 1_000_000  # a count beyond this in a report is not the engine's


def avoid_list(session: Session, team_id: int) -> list[dict]:
    """[{"strategy", "attempts", "successes", "success_rate", "jobs"}] for the team, worst first."""
    totals = session.execute(
        select(StrategyOutcome.strategy, func.sum(StrategyOutcome.attempts), func.sum(StrategyOutcome.successes))
        .where(StrategyOutcome.team_id == team_id).group_by(StrategyOutcome.strategy)).all()
    avoid = []
    for strategy, attempts, successes in totals:
        attempts, successes = int(attempts or 0), int(successes or 0)
        if attempts < AVOID_MIN_ATTEMPTS or successes / attempts >= AVOID_BELOW:
            continue
        jobs = session.scalars(
            select(StrategyOutcome.job_id).where(StrategyOutcome.team_id == team_id,
                                                 StrategyOutcome.strategy == strategy)
            .order_by(StrategyOutcome.recorded_at.desc(), StrategyOutcome.id.desc()).limit(PROVENANCE_JOBS)).all()
        avoid.append({"strategy": strategy, "attempts": attempts, "successes": successes,
                      "success_rate": round(successes / attempts, 3), "jobs": list(jobs)})
    return sorted(avoid, key=lambda a: (a["success_rate"], -a["attempts"], a["strategy"]))


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT * 1000:
        return None
    return value


def outcomes_from_report(report: dict) -> list[dict]:
    """The report's strategy outcomes that pass the checks (see the module doc)."""
    agents = report.get("agents") if isinstance(report, dict) else None
    rows = agents.get("strategy_outcomes") if isinstance(agents, dict) else None
    out: dict[str, dict] = {}
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict) or row.get("strategy") not in STRATEGIES:
            continue
        attempts, successes = _count(row.get("attempts")), _count(row.get("successes"))
        if attempts is None or successes is None or attempts > MAX_COUNT or successes > attempts or not attempts:
            continue
        out[row["strategy"]] = {"strategy": row["strategy"], "attempts": attempts, "successes": successes}
    return list(out.values())


def usage_from_report(report: dict) -> dict:
    """The job's LLM usage from report.json's `llm` (one generator's dict, or a list of them)."""
    llm = report.get("llm") if isinstance(report, dict) else None
    parts = llm if isinstance(llm, list) else [llm] if isinstance(llm, dict) else []
    usage: dict[str, Any] = {"llm_calls": 0, "llm_prompt_tokens": 0, "llm_completion_tokens": 0, "llm_cost": None}
    for part in parts:
        if not isinstance(part, dict):
            continue
        for key, column in (("calls", "llm_calls"), ("prompt_tokens", "llm_prompt_tokens"),
                            ("completion_tokens", "llm_completion_tokens")):
            usage[column] += _count(part.get(key)) or 0
        cost = part.get("cost")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and math.isfinite(cost) and cost >= 0:
            usage["llm_cost"] = (usage["llm_cost"] or 0.0) + float(cost)
    return usage


def record_job(session: Session, team_id: int, job_id: str, report: dict) -> list[dict]:
    """Store one job's strategy outcomes (replacing any earlier record of the job) and its LLM usage."""
    outcomes = outcomes_from_report(report)
    session.execute(delete(StrategyOutcome).where(StrategyOutcome.job_id == job_id))
    for row in outcomes:
        session.add(StrategyOutcome(team_id=team_id, job_id=job_id, **row))
    session.execute(update(Job).where(Job.id == job_id, Job.team_id == team_id).values(**usage_from_report(report)))
    session.commit()
    return outcomes
