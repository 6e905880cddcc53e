"""The team overview's figures, from one pass over the team's jobs: counts, geomeans per tag and per
precision policy (service.job_queries' rule of "measured"), jobs over time by outcome, the speedup
distribution, GPU-minutes and the LLM tokens the jobs spent."""
from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from kernelopt.api.ui import charts
from kernelopt.core.outcome import cause_code
from kernelopt.service.job_queries import StatsTally
from kernelopt.service.strategy_memory import AVOID_BELOW, AVOID_MIN_ATTEMPTS, avoid_list
from kernelopt.storage.models import Job, utcnow

MAX_TAGS = 20  # tags with their own geomean row, alphabetically
MAX_BUCKETS = 30  # bars on the jobs-over-time chart
SERIES = ["optimized", "matched", "fallback", "failed", "crashed", "cancelled", "unfinished"]
# Speedup ranges of the distribution: 1.0 is "the compiler's code kept"; γ = 1.03 starts the wins.
EDGES = [(None, 0.999, "< 1.0×"), (0.999, 1.001, "1.0× kept"), (1.001, 1.1, "1.0–1.1×"), (1.1, 1.25, "1.1–1.25×"),
         (1.25, 1.5, "1.25–1.5×"), (1.5, 2.0, "1.5–2×"), (2.0, 3.0, "2–3×"), (3.0, None, "≥ 3×")]


def team_overview(session: Any, team_id: int) -> dict:
    timing = Job.result["timing"].as_string()
    precision = Job.result["precision"].as_string()
    asked = Job.options["precision"].as_string()
    rows = session.execute(select(Job.status, Job.outcome, Job.speedup, Job.gpu_seconds, timing, precision, asked,
                                  Job.tag, Job.cause, Job.created_at).where(Job.team_id == team_id)).all()
    total = StatsTally()
    by_tag: dict[str, StatsTally] = {}
    by_precision: dict[str, StatsTally] = {}
    causes: Counter = Counter()
    speedups: list[float] = []
    for status, outcome, speedup, gpu, job_timing, prec, asked_prec, tag, cause, _ in rows:
        args = (status, outcome, speedup, gpu, job_timing)
        deployed = total.add(*args)
        if deployed is not None:
            speedups.append(deployed)
        if tag is not None:
            by_tag.setdefault(tag, StatsTally()).add(*args)
        by_precision.setdefault(prec or asked_prec or "strict", StatsTally()).add(*args)
        if cause:
            causes[cause_code(cause)] += 1
    tags = sorted(by_tag)
    stats = total.as_dict()
    return {
        "stats": stats,
        "gpu_minutes": stats["gpu_seconds"] / 60.0,
        "causes": sorted(causes.items(), key=lambda kv: (-kv[1], kv[0])),
        "by_tag": [(t, by_tag[t].as_dict()) for t in tags[:MAX_TAGS]],
        "more_tags": len(tags) > MAX_TAGS,
        "by_precision": [(p, t.as_dict()) for p, t in sorted(by_precision.items())],
        "over_time": over_time(rows),
        "distribution": distribution(speedups),
        "llm": llm_totals(session, team_id),
        # the strategies the team's planner is told to avoid, with the jobs that rest on it
        "avoid": avoid_list(session, team_id),
        "avoid_rule": f"under {AVOID_BELOW:.0%} success after at least {AVOID_MIN_ATTEMPTS} attempts",
    }


def over_time(rows: list) -> dict:
    """Jobs created per hour, day or week (whichever fits the team's span in MAX_BUCKETS), by outcome."""
    if not rows:
        return {"buckets": [], "unit": "day", "chart": charts.stacked_bars("chart-over-time", "No jobs yet", [],
                                                                             SERIES)}
    first, last = min(r.created_at for r in rows), max(max(r.created_at for r in rows), utcnow())
    span = last - first
    unit, size = next(((u, s) for u, s in (("hour", timedelta(hours=1)), ("day", timedelta(days=1)))
                       if span / s < MAX_BUCKETS), ("week", timedelta(weeks=1)))
    # a span longer than MAX_BUCKETS weeks shows its latest weeks
    start = max(_floor(first, unit), _floor(last, unit) - size * (MAX_BUCKETS - 1))
    counts: dict[datetime, Counter] = {}
    t = start
    while t <= last:
        counts[t] = Counter()
        t += size
    for r in rows:
        if r.created_at < start:
            continue
        key = start + size * int((r.created_at - start) / size)
        counts.setdefault(key, Counter())[_series(r.status, r.outcome)] += 1
    fmt = "%m-%d %H:00" if unit == "hour" else "%m-%d"
    buckets = [(k.strftime(fmt), dict(c)) for k, c in sorted(counts.items())]
    title = f"Jobs created per {unit}, by outcome (UTC)"
    return {"buckets": buckets, "unit": unit, "chart": charts.stacked_bars("chart-over-time", title, buckets, SERIES)}


def _floor(t: datetime, unit: str) -> datetime:
    t = t.replace(minute=0, second=0, microsecond=0)
    if unit != "hour":
        t = t.replace(hour=0)
    if unit == "week":
        t -= timedelta(days=t.weekday())
    return t


def _series(status: str, outcome: str | None) -> str:
    if status in ("crashed", "cancelled"):
        return status
    if status in ("succeeded", "failed"):
        return outcome or "failed"
    return "unfinished"


def distribution(speedups: list[float]) -> dict:
    bins = [(label, sum(1 for s in speedups if (lo is None or s >= lo) and (hi is None or s < hi)))
            for lo, hi, label in EDGES]
    while bins and bins[0][1] == 0 and bins[0][0] == EDGES[0][2]:
        bins.pop(0)  # "< 1.0×" only when a job has one (Gate 4 keeps none)
    title = f"Deployed speedup vs torch.compile of {len(speedups)} measured jobs"
    return {"bins": bins, "chart": charts.histogram("chart-speedups", title, bins)}


def llm_totals(session: Any, team_id: int) -> dict:
    """LLM usage over the team's jobs, from the columns the worker fills from each job's report.json
    (service.strategy_memory.record_job, the same source as /v1/stats); jobs with no call recorded none."""
    used = (Job.team_id == team_id) & (Job.llm_calls > 0)
    calls, prompt, completion, cost, jobs = session.execute(
        select(func.sum(Job.llm_calls), func.sum(Job.llm_prompt_tokens), func.sum(Job.llm_completion_tokens),
               func.sum(Job.llm_cost), func.count()).where(used)).one()
    return {"jobs": int(jobs or 0), "tokens": int(prompt or 0) + int(completion or 0), "calls": int(calls or 0),
            "cost": None if cost is None else float(cost)}
