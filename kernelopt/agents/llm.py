"""The LLM client: chat completions over the `openai` package, against any OpenAI-compatible endpoint.

Settings come from the environment (`LLMSettings.from_env`): `KERNELOPT_LLM_BASE_URL`,
`KERNELOPT_LLM_MODEL`, `KERNELOPT_LLM_API_KEY` (falling back to `OPENAI_BASE_URL` and
`OPENAI_API_KEY`), `KERNELOPT_LLM_TIMEOUT_S`, `KERNELOPT_LLM_MAX_RETRIES`,
`KERNELOPT_LLM_MAX_TOKENS`, `KERNELOPT_LLM_TEMPERATURE`, and optional prices
`KERNELOPT_LLM_PRICE_IN` / `KERNELOPT_LLM_PRICE_OUT` (per million tokens).

Every call — prompt, reply or error, token counts, latency — is appended to the job's
`transcripts.jsonl` (a top-level artifact, worker/artifacts.py). The `openai` package
is imported on first use only: the engine imports without it.
"""
from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from kernelopt.core.jobfiles import append_text

TRANSCRIPTS_FILE = "transcripts.jsonl"
CANCEL_POLL_S = 0.5  # a cancelled job's call is abandoned within this long, whatever its timeout


class LLMError(Exception):
    """A call that produced no reply: `kind` is timeout | rate-limit | http | connection | config | cancelled."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind = kind


@dataclass
class LLMSettings:
    base_url: Optional[str] = None  # None: the openai package's default (api.openai.com)
    model: Optional[str] = None
    api_key: Optional[str] = None
    timeout_s: float = 900.0  # per call (docs/architecture.md, Agents)
    max_retries: int = 3  # on 429, 5xx and connection errors; a timeout is not retried
    backoff_s: float = 2.0  # first retry's wait, doubled each time (a Retry-After up to 60 s is honoured)
    max_tokens: int = 8192
    temperature: float = 0.2
    price_in_per_mtok: Optional[float] = None
    price_out_per_mtok: Optional[float] = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "LLMSettings":
        env = os.environ if env is None else env

        def get(*names: str) -> Optional[str]:
            return next((env[n] for n in names if env.get(n)), None)

        def num(name: str, default, kind=float):
            raw = env.get(name)
            if not raw:
                return default
            try:
                return kind(raw)
            except ValueError:
                raise ValueError(f"{name}={raw!r} is not a number") from None

        return cls(base_url=get("KERNELOPT_LLM_BASE_URL", "OPENAI_BASE_URL"),
                   model=get("KERNELOPT_LLM_MODEL"),
                   api_key=get("KERNELOPT_LLM_API_KEY", "OPENAI_API_KEY"),
                   timeout_s=num("KERNELOPT_LLM_TIMEOUT_S", 900.0),
                   max_retries=num("KERNELOPT_LLM_MAX_RETRIES", 3, int),
                   backoff_s=num("KERNELOPT_LLM_BACKOFF_S", 2.0),
                   max_tokens=num("KERNELOPT_LLM_MAX_TOKENS", 8192, int),
                   temperature=num("KERNELOPT_LLM_TEMPERATURE", 0.2),
                   price_in_per_mtok=num("KERNELOPT_LLM_PRICE_IN", None),
                   price_out_per_mtok=num("KERNELOPT_LLM_PRICE_OUT", None))

    def unconfigured(self) -> Optional[str]:
        """None when calls can be made, else why not (said by `applicable`)."""
        if not self.model:
            return "no LLM configured: set KERNELOPT_LLM_MODEL (and KERNELOPT_LLM_BASE_URL / KERNELOPT_LLM_API_KEY)"
        if not (self.base_url or self.api_key):
            return "no LLM endpoint configured: set KERNELOPT_LLM_BASE_URL or KERNELOPT_LLM_API_KEY"
        return None

    def public(self) -> dict:
        """The settings without the key (for reports and transcripts)."""
        d = asdict(self)
        d["api_key"] = "set" if self.api_key else None
        return d


@dataclass
class Usage:
    calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: Optional[float] = None  # only where prices are configured

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict:
        return {**asdict(self), "total_tokens": self.total_tokens}


@dataclass
class LLMReply:
    content: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    attempts: int  # HTTP requests made (retries included)
    call: int  # this call's number within the client (1-based; the transcript's `call`)
    finish_reason: Optional[str] = None
    meta: dict = field(default_factory=dict)


class LLMClient:
    """One job's client: retries, token accounting and the transcript file."""

    def __init__(self, settings: LLMSettings, transcript_path: str | Path | None = None,
                 should_cancel: Callable[[], bool] | None = None, sleep: Callable[[float], None] = time.sleep):
        reason = settings.unconfigured()
        if reason:
            raise LLMError("config", reason)
        self.settings = settings
        self.transcript_path = Path(transcript_path) if transcript_path else None
        self.should_cancel = should_cancel
        self.usage = Usage()
        self._sleep = sleep
        self._lock = threading.Lock()
        self._client = None

    def _openai(self):
        if self._client is None:
            try:
                import openai
            except ImportError:
                raise LLMError("config", "the `openai` package is not installed (pip install 'kernelopt[llm]')") \
                    from None
            s = self.settings
            # Retries are ours (logged per attempt, cancellable between attempts), not the package's.
            self._client = openai.OpenAI(base_url=s.base_url, api_key=s.api_key or "unused", timeout=s.timeout_s,
                                         max_retries=0)
        return self._client

    def chat(self, messages: list[dict], *, agent: str = "executor", meta: dict | None = None) -> LLMReply:
        """One chat completion; raises LLMError when no reply came (after the retries)."""
        client = self._openai()
        s = self.settings
        with self._lock:
            self.usage.calls += 1
            call = self.usage.calls
        started = time.monotonic()
        attempts = 0
        errors: list[str] = []
        while True:
            if self.should_cancel is not None and self.should_cancel():
                err = LLMError("cancelled", "the job was cancelled")
                break
            attempts += 1
            try:
                resp = self._create(client, model=s.model, messages=messages, max_tokens=s.max_tokens,
                                    temperature=s.temperature)
            except Exception as exc:  # noqa: BLE001 - classified below; anything else is not retried
                err, retry_after = _classify(exc)
                errors.append(str(err))
                if err.kind in ("rate-limit", "http-5xx", "connection") and attempts <= s.max_retries:
                    wait = retry_after if retry_after is not None and retry_after <= 60 else \
                        s.backoff_s * 2 ** (attempts - 1)
                    self._wait(wait)
                    continue
                if err.kind == "http-5xx":
                    err = LLMError("http", str(err).removeprefix("http-5xx: "))
                break
            content = (resp.choices[0].message.content or "") if resp.choices else ""
            usage = getattr(resp, "usage", None)
            pt = int(getattr(usage, "prompt_tokens", 0) or 0)
            ct = int(getattr(usage, "completion_tokens", 0) or 0)
            reply = LLMReply(content, pt, ct, round(time.monotonic() - started, 3), attempts, call,
                             resp.choices[0].finish_reason if resp.choices else None, dict(meta or {}))
            with self._lock:
                self.usage.prompt_tokens += pt
                self.usage.completion_tokens += ct
                cost = self._cost(pt, ct)
                if cost is not None:
                    self.usage.cost = round((self.usage.cost or 0.0) + cost, 6)
            self._record(call, agent, messages, meta, reply=reply, errors=errors, cost=cost)
            return reply
        with self._lock:
            self.usage.failed_calls += 1
        self._record(call, agent, messages, meta, error=str(err), errors=errors,
                     latency_s=round(time.monotonic() - started, 3), attempts=attempts)
        raise err

    def _cancelled(self) -> bool:
        return self.should_cancel is not None and bool(self.should_cancel())

    def _wait(self, seconds: float) -> None:
        """The backoff between retries, cut short when the job is cancelled."""
        end = time.monotonic() + seconds
        while not self._cancelled() and (left := end - time.monotonic()) > 0:
            self._sleep(min(left, CANCEL_POLL_S))

    def _create(self, client: Any, **request: Any) -> Any:
        """The request, abandoned (LLMError cancelled) within CANCEL_POLL_S of the job being cancelled."""
        if self.should_cancel is None:
            return client.chat.completions.create(**request)
        box: dict = {}
        done = threading.Event()

        def call() -> None:
            try:
                box["reply"] = client.chat.completions.create(**request)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                box["error"] = exc
            finally:
                done.set()

        # A daemon thread: an abandoned request ends by its own timeout, holding nothing of the job's.
        threading.Thread(target=call, name="kernelopt-llm-call", daemon=True).start()
        while not done.wait(CANCEL_POLL_S):
            if self._cancelled():
                raise LLMError("cancelled", "the job was cancelled during the call")
        if "error" in box:
            raise box["error"]
        return box["reply"]

    def _cost(self, pt: int, ct: int) -> Optional[float]:
        s = self.settings
        if s.price_in_per_mtok is None and s.price_out_per_mtok is None:
            return None
        return (pt * (s.price_in_per_mtok or 0.0) + ct * (s.price_out_per_mtok or 0.0)) / 1e6

    def _record(self, call: int, agent: str, messages: list[dict], meta: dict | None, *,
                reply: LLMReply | None = None, error: str | None = None, errors: list[str] | None = None,
                cost: float | None = None, latency_s: float | None = None, attempts: int | None = None) -> None:
        if self.transcript_path is None:
            return
        rec = {"call": call, "at": time.time(), "agent": agent, "model": self.settings.model,
               "base_url": self.settings.base_url, "meta": meta or {}, "messages": messages,
               "reply": reply.content if reply else None, "error": error, "retried_errors": errors or [],
               "finish_reason": reply.finish_reason if reply else None,
               "prompt_tokens": reply.prompt_tokens if reply else 0,
               "completion_tokens": reply.completion_tokens if reply else 0, "cost": cost,
               "latency_s": reply.latency_s if reply else latency_s,
               "attempts": reply.attempts if reply else attempts}
        with self._lock:
            append_text(self.transcript_path, json.dumps(rec) + "\n")  # never through a planted link


def _classify(exc: Exception) -> tuple[LLMError, Optional[float]]:
    """An openai exception as an LLMError kind (http-5xx is internal: retried) and its Retry-After, if any."""
    import openai

    if isinstance(exc, LLMError):
        return exc, None
    if isinstance(exc, openai.APITimeoutError):
        return LLMError("timeout", f"no reply within the timeout ({exc})"), None
    if isinstance(exc, openai.APIConnectionError):
        return LLMError("connection", str(exc)), None
    if isinstance(exc, openai.APIStatusError):
        retry_after = None
        try:
            retry_after = float(exc.response.headers.get("retry-after", ""))
        except (TypeError, ValueError):
            pass
        body = str(exc)[:500]
        if exc.status_code == 429:
            return LLMError("rate-limit", f"HTTP 429: {body}"), retry_after
        if exc.status_code >= 500:
            return LLMError("http-5xx", f"HTTP {exc.status_code}: {body}"), retry_after
        return LLMError("http", f"HTTP {exc.status_code}: {body}"), None
    return LLMError("http", f"{type(exc).__name__}: {exc}"), None
