"""The worker and the LLM agents: settings and the team's AVOID list go to the engine as data, what the agents
learned and spent comes back into the database. A real kernel job on the Triton interpreter, the real
PostgreSQL, the scripted OpenAI-compatible server (tests/llm_server.py)."""
from __future__ import annotations

from sqlalchemy import select

from tests.llm_server import ScriptedLLM, fenced, plan, tokens
from tests.service.worker.conftest import KERNEL
from tests.service.worker.test_worker import load, submit, submit_file
from tests.test_llm import BROKEN


def test_the_worker_passes_llm_settings_and_avoid_to_the_engine_and_records_outcomes_and_tokens(wsettings,
                                                                                                monkeypatch):
    from kernelopt.service import job_queries, strategy_memory
    from kernelopt.service.auth import create_team
    from kernelopt.storage.models import StrategyOutcome
    from kernelopt.worker.execute import _scope, execute_job

    with _scope(wsettings) as s:
        team = create_team(s, "agents-team").id
    earlier = submit(wsettings, team, b"an earlier job", "earlier.py")
    with _scope(wsettings) as s:
        strategy_memory.record_job(s, team, earlier, {"agents": {"strategy_outcomes": [
            {"strategy": "block-sizes", "attempts": 3, "successes": 0}]}})
    with ScriptedLLM([fenced(BROKEN)], planner=[plan("loop-tiling", "Tile the loop.")]) as server:
        # The worker's own environment holds the endpoint, as a deployment's would; the engine's child
        # environment is allow-listed and never holds it.
        for k, v in server.env().items():
            monkeypatch.setenv(k, v)
        job_id = submit_file(wsettings, team, KERNEL, {"generators": ["llm"], "iterations": 2,
                                                       "executor_retries": 0, "time_budget_s": 150})
        assert execute_job(job_id, wsettings, "w-agents") == "succeeded"
    job = load(wsettings, job_id)
    assert job.outcome == "fallback" and job.cause.startswith("no-faster-candidate"), job.cause
    assert len(server.planner_requests) == 2 and server.requests, "the engine never reached the endpoint"
    for r in server.planner_requests:
        prompt = "\n".join(m["content"] for m in r["body"]["messages"] if m["role"] == "user")
        assert f"AVOID block-sizes: 0 of 3 attempts succeeded (jobs {earlier})" in prompt
    # tokens of both agents on the job's row, as the server counted them
    assert job.llm_calls == len(server.all_requests) == 4
    assert job.llm_prompt_tokens == sum(tokens("".join(m["content"] for m in r["body"]["messages"]))
                                        for r in server.all_requests)
    assert job.llm_completion_tokens == sum(tokens(str(r["step"])) for r in server.all_requests)
    with _scope(wsettings) as s:
        rows = s.scalars(select(StrategyOutcome).where(StrategyOutcome.job_id == job_id)).all()
        assert [(r.strategy, r.attempts, r.successes, r.team_id) for r in rows] == [("loop-tiling", 2, 0, team)]
        assert job_queries.team_stats(s, team)["llm_total_tokens"] == job.llm_prompt_tokens + \
            job.llm_completion_tokens
        names = {a.name for a in job_queries.list_artifacts(s, team, job_id)}
        # loop-tiling has 2 attempts: not yet avoided; block-sizes still is, on the earlier job's record
        assert [a["strategy"] for a in strategy_memory.avoid_list(s, team)] == ["block-sizes"]
    assert {"experience.jsonl", "transcripts.jsonl", "trajectory.jsonl"} <= names
