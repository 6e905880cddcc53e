"""A scripted OpenAI-compatible server for tests: a real HTTP server on 127.0.0.1.

`ScriptedLLM(script)` serves `POST /v1/chat/completions`; each request takes the
next step of the script (the last step repeats when the script runs out):

- a string: a completed reply with that content;
- `{"status": 429}` (or any HTTP status): an error response, optional `retry_after`;
- `{"hang": seconds}`: the reply never comes (until `seconds` pass or the server stops);
- a callable `(request_json) -> step`: chooses the step from the request.

Requests of the planner agent (its system prompt, agents/prompts/planner_system.md)
take their steps from a script of their own, `planner` (by default one plan,
strategy "other"), so a test scripts the executor's replies alone unless it cares
about plans. Executor request bodies are kept in `requests`, the planner's in
`planner_requests`, both in `all_requests` (with the step each got). Usage counts
are deterministic: prompt tokens = characters of the messages // 4, completion
tokens = characters of the reply // 4.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Union

Step = Union[str, dict, Callable[[dict], Any]]


def tokens(text: str) -> int:
    return len(text) // 4


def fenced(code: str, prose: str = "Here is a faster version.") -> str:
    return f"{prose}\n\n```python\n{code.rstrip()}\n```\n"


def plan(strategy: str = "other", text: str = "Make it faster.") -> str:
    """A planner reply in the form agents/prompts/planner_system.md asks for."""
    return f"STRATEGY: {strategy}\nPLAN: {text}"


PLANNER_MARK = "You are the planner"


def is_planner(body: dict) -> bool:
    return any(m.get("role") == "system" and PLANNER_MARK in (m.get("content") or "")
               for m in body.get("messages", []))


class ScriptedLLM:
    def __init__(self, script: list[Step], model: str = "scripted-model", planner: list[Step] | None = None):
        self.script = list(script)
        self.planner = list(planner or [plan()])
        self.model = model
        self.requests: list[dict] = []
        self.planner_requests: list[dict] = []
        self.all_requests: list[dict] = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def env(self, **extra: str) -> dict[str, str]:
        """The settings a job needs to use this server."""
        return {"KERNELOPT_LLM_BASE_URL": self.base_url, "KERNELOPT_LLM_MODEL": self.model,
                "KERNELOPT_LLM_API_KEY": "test-key", "KERNELOPT_LLM_BACKOFF_S": "0.05", **extra}

    def __enter__(self) -> "ScriptedLLM":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def _next(self, body: dict) -> Any:
        with self._lock:
            script, kept = (self.planner, self.planner_requests) if is_planner(body) else (self.script, self.requests)
            step = script[min(len(kept), len(script) - 1)]
            step = step(body) if callable(step) else step
            kept.append({"body": body, "step": step})
            self.all_requests.append(kept[-1])
        return step

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                step = server._next(body)
                if isinstance(step, dict) and "hang" in step:
                    server.stopping.wait(step["hang"])
                    return  # the connection closes without a reply
                if isinstance(step, dict) and "status" in step:
                    headers = {"Retry-After": str(step["retry_after"])} if "retry_after" in step else {}
                    self._send(step["status"], {"error": {"message": step.get("message", "scripted error"),
                                                          "type": "scripted"}}, headers)
                    return
                content = str(step)
                prompt = "".join(m.get("content") or "" for m in body.get("messages", []))
                pt, ct = tokens(prompt), tokens(content)
                self._send(200, {
                    "id": f"chatcmpl-{len(server.all_requests)}", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", server.model),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}})

        return Handler
