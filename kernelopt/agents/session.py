"""One job's LLM session, shared by the job's agent generators (`llm`, `llm_codegen`).

A job may name several agent generators (`--generators llm,llm_codegen`: the executor on
Triton kernels, codegen on library groups). They share one client, so that
`transcripts.jsonl` numbers the job's calls once (two clients would both write call 1),
and one tally of calls and tokens per agent, so that report.json's `llm` counts each call
once.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Optional

from kernelopt.agents.llm import LLMClient, LLMSettings


class AgentSession:
    def __init__(self, settings: LLMSettings, transcript_path: str | Path | None = None,
                 should_cancel: Callable[[], bool] | None = None):
        self.settings = settings
        self.transcript_path = Path(transcript_path) if transcript_path else None
        self.should_cancel = should_cancel
        self._client: Optional[LLMClient] = None
        self.agents: dict[str, dict[str, int]] = {}  # per agent: calls and tokens

    @property
    def client(self) -> LLMClient:
        """Made at the first call (it refuses settings without an endpoint: `applicable` said so first)."""
        if self._client is None:
            self._client = LLMClient(self.settings, self.transcript_path, self.should_cancel)
        return self._client

    def count(self, agent: str, prompt_tokens: int, completion_tokens: int) -> None:
        t = self.agents.setdefault(agent, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
        t["calls"] += 1
        t["prompt_tokens"] += prompt_tokens
        t["completion_tokens"] += completion_tokens

    def usage(self) -> dict:
        """Token counts of the session's calls (and cost where prices are configured), in all and per agent."""
        base = {"model": self.settings.model, "base_url": self.settings.base_url,
                "agents": {k: dict(v) for k, v in self.agents.items()}}
        if self._client is None:
            return {**base, "calls": 0, "failed_calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                    "total_tokens": 0, "cost": None}
        return {**base, **self._client.usage.to_dict()}


def job_usage(generators: Iterable[object]) -> dict | list[dict] | None:
    """report.json's `llm`: the usage of each distinct session among `generators` (one dict when one)."""
    sessions: dict[int, AgentSession] = {}
    for g in generators:
        s = getattr(g, "session", None)
        if isinstance(s, AgentSession):
            sessions.setdefault(id(s), s)
    usages = [s.usage() for s in sessions.values()]
    if not usages:
        return None
    return usages[0] if len(usages) == 1 else usages
