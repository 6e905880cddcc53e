"""The team's strategy memory on the real databases: outcomes in, the AVOID list (with provenance) out,
LLM token counts per job and per team (/v1/stats)."""
from __future__ import annotations

import pytest
from sqlalchemy import select

from kernelopt.service import job_queries, strategy_memory
from kernelopt.storage.models import Job, StrategyOutcome

from .test_jobs import submit


def report(*outcomes: tuple[str, int, int], calls=0, pt=0, ct=0, cost=None) -> dict:
    return {"agents": {"strategy_outcomes": [{"strategy": s, "attempts": n, "successes": w} for s, n, w in outcomes]},
            "llm": {"calls": calls, "prompt_tokens": pt, "completion_tokens": ct, "cost": cost}}


def new_job(session, team_id, blobs, settings, i: int) -> str:
    job, _ = submit(session, team_id, blobs, settings, data=b"memory job %d" % i)
    return job.id


def test_avoid_needs_three_attempts_under_30_percent_and_names_its_jobs(session, make_team, blobs, settings):
    team, other = make_team().team.id, make_team().team.id
    j1, j2, j3 = (new_job(session, team, blobs, settings, i) for i in range(3))
    strategy_memory.record_job(session, team, j1, report(("block-sizes", 2, 0), ("loop-tiling", 2, 1)))
    assert strategy_memory.avoid_list(session, team) == []  # 2 attempts: too few to judge
    strategy_memory.record_job(session, team, j2, report(("block-sizes", 1, 0), ("loop-tiling", 1, 0),
                                                         ("operation-fusion", 3, 1)))
    # block-sizes 0/3 (avoided), loop-tiling 1/3 = 33% (kept), operation-fusion 1/3 (kept)
    avoid = strategy_memory.avoid_list(session, team)
    assert [(a["strategy"], a["attempts"], a["successes"]) for a in avoid] == [("block-sizes", 3, 0)]
    assert set(avoid[0]["jobs"]) == {j1, j2} and avoid[0]["success_rate"] == 0.0
    strategy_memory.record_job(session, team, j3, report(("loop-tiling", 4, 0)))
    assert [(a["strategy"], a["attempts"], a["successes"]) for a in strategy_memory.avoid_list(session, team)] == [
        ("block-sizes", 3, 0), ("loop-tiling", 7, 1)]  # 1/7 = 14%: now avoided too, worst first
    # per team: the other team's memory is its own
    assert strategy_memory.avoid_list(session, other) == []
    # recording a job again (a redelivered message) replaces its rows instead of counting twice
    strategy_memory.record_job(session, team, j3, report(("loop-tiling", 4, 0)))
    rows = session.scalars(select(StrategyOutcome).where(StrategyOutcome.job_id == j3)).all()
    assert [(r.strategy, r.attempts, r.successes, r.team_id) for r in rows] == [("loop-tiling", 4, 0, team)]


def test_a_report_is_checked_before_anything_is_stored(session, team_key, blobs, settings):
    team = team_key.team.id
    job = new_job(session, team, blobs, settings, 10)
    bad = {"agents": {"strategy_outcomes": [
        {"strategy": "not-a-strategy", "attempts": 5, "successes": 0},  # unknown label
        {"strategy": "block-sizes", "attempts": 2, "successes": 3},  # more successes than attempts
        {"strategy": "loop-tiling", "attempts": True, "successes": 0},  # not an integer
        {"strategy": "recomputation", "attempts": 10 ** 9, "successes": 0},  # not the engine's count
        "junk", {"strategy": "other", "attempts": 3, "successes": 0}]},
        "llm": [{"calls": 2, "prompt_tokens": 10, "completion_tokens": -5, "cost": float("nan")}, "junk"]}
    assert strategy_memory.record_job(session, team, job, bad) == [{"strategy": "other", "attempts": 3,
                                                                    "successes": 0}]
    row = session.get(Job, job)
    session.refresh(row)
    assert (row.llm_calls, row.llm_prompt_tokens, row.llm_completion_tokens, row.llm_cost) == (2, 10, 0, None)


def test_token_counts_per_job_and_their_sum_per_team_in_stats(session, make_team, blobs, settings):
    team, other = make_team().team.id, make_team().team.id
    a, b = new_job(session, team, blobs, settings, 20), new_job(session, team, blobs, settings, 21)
    c = new_job(session, other, blobs, settings, 22)
    strategy_memory.record_job(session, team, a, report(calls=3, pt=1000, ct=200, cost=0.5))
    strategy_memory.record_job(session, team, b, {"llm": [{"calls": 1, "prompt_tokens": 10, "completion_tokens": 5,
                                                          "cost": None},
                                                         {"calls": 2, "prompt_tokens": 20, "completion_tokens": 7,
                                                          "cost": 0.25}]})
    strategy_memory.record_job(session, other, c, report(calls=9, pt=9, ct=9))
    s = job_queries.team_stats(session, team)
    assert (s["llm_calls"], s["llm_prompt_tokens"], s["llm_completion_tokens"], s["llm_total_tokens"]) == (
        6, 1030, 212, 1242)
    assert s["llm_cost"] == pytest.approx(0.75)
    assert job_queries.team_stats(session, other)["llm_total_tokens"] == 18
    fresh = make_team().team.id
    assert job_queries.team_stats(session, fresh)["llm_calls"] == 0 and job_queries.team_stats(
        session, fresh)["llm_cost"] is None


def test_the_api_shows_a_jobs_tokens_and_the_teams_sum(settings, team_key):
    from tests.service.api.conftest import ScriptedWorker, make_api

    api = make_api(settings, team_key)
    with api.client:
        a, b = (api.submit(data).json()["id"] for data in (b"tokens a", b"tokens b"))
        ScriptedWorker(api).run(a, outcome="fallback", speedup=1.0)
        with api.sessionmaker() as s:
            strategy_memory.record_job(s, team_key.team.id, a, report(("block-sizes", 1, 1), calls=4, pt=400, ct=40,
                                                                      cost=0.01))
        got = api.client.get(f"/v1/jobs/{a}", headers=api.headers()).json()
        assert (got["llm_calls"], got["llm_prompt_tokens"], got["llm_completion_tokens"], got["llm_cost"]) == (
            4, 400, 40, 0.01)
        assert api.client.get(f"/v1/jobs/{b}", headers=api.headers()).json()["llm_calls"] == 0
        stats = api.client.get("/v1/stats", headers=api.headers()).json()
        assert (stats["llm_calls"], stats["llm_total_tokens"], stats["llm_cost"]) == (4, 440, 0.01)
