"""A small HTTP client of the KernelOPT API (httpx): submit, follow events, download artifacts.

Used by `kernelopt submit`; usable from Python too:

    c = KernelOptClient("http://127.0.0.1:8000", "ko_...")
    job = c.submit("model.py", options={"dtype": "bf16"})
    for event in c.events(job["id"]): ...
"""
from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Iterator

import httpx

from kernelopt.core.text import clip

DEFAULT_URL = "http://127.0.0.1:8000"
TERMINAL = ("succeeded", "failed", "cancelled", "crashed")


class ApiError(Exception):
    def __init__(self, status_code: int, detail: str):
        super().__init__(f"HTTP {status_code}: {detail}")
        self.status_code = status_code
        self.detail = detail


@dataclass
class SseEvent:
    event: str = "message"
    data: str = ""
    id: str | None = None
    retry_ms: int | None = None

    def json(self) -> Any:
        return json.loads(self.data) if self.data else None


@dataclass
class _SseParser:
    current: dict = field(default_factory=dict)
    data_lines: list = field(default_factory=list)

    def feed(self, line: str) -> SseEvent | None:
        if line == "":
            if not self.data_lines and "event" not in self.current and "id" not in self.current:
                retry = self.current.pop("retry", None)
                self.current.clear()
                return SseEvent(event="retry", retry_ms=retry) if retry is not None else None
            ev = SseEvent(event=self.current.get("event", "message"), data="\n".join(self.data_lines),
                          id=self.current.get("id"), retry_ms=self.current.get("retry"))
            self.current.clear()
            self.data_lines.clear()
            return ev
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            self.data_lines.append(value)
        elif name in ("event", "id"):
            self.current[name] = value
        elif name == "retry" and value.isdigit():
            self.current["retry"] = int(value)
        return None


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
        detail = body.get("detail", body) if isinstance(body, dict) else body
        return detail if isinstance(detail, str) else json.dumps(detail)
    except Exception:
        return clip(response.text, 500) or response.reason_phrase


class KernelOptClient:
    def __init__(self, url: str | None = None, key: str | None = None, *, timeout_s: float = 60.0,
                 transport: httpx.BaseTransport | None = None):
        self.url = (url or os.environ.get("KERNELOPT_URL") or DEFAULT_URL).rstrip("/")
        self.key = key if key is not None else os.environ.get("KERNELOPT_API_KEY")
        headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        self.http = httpx.Client(base_url=self.url, headers=headers, transport=transport,
                                 timeout=httpx.Timeout(timeout_s, connect=10.0))

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> "KernelOptClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _check(self, response: httpx.Response) -> httpx.Response:
        if response.status_code >= 400:
            raise ApiError(response.status_code, _detail(response))
        return response

    # -- jobs ------------------------------------------------------------------------------
    def submit(self, file: str | Path, *, weights: str | Path | None = None, options: dict | None = None,
               tag: str | None = None, idempotency_key: str | None = None, retries: int = 5,
               log=None) -> dict:
        """POST the job; connection errors, 5xx and 429 are retried with the same Idempotency-Key."""
        key = idempotency_key or uuid.uuid4().hex
        file = Path(file)
        delay = 1.0
        for attempt in range(retries + 1):
            files = {"file": (file.name, file.read_bytes(), "text/x-python")}
            if weights is not None:
                files["weights"] = (Path(weights).name, Path(weights).read_bytes(), "application/octet-stream")
            data = {"options": json.dumps(options or {})}
            if tag:
                data["tag"] = tag
            try:
                r = self.http.post("/v1/jobs", files=files, data=data, headers={"Idempotency-Key": key})
            except httpx.TransportError as exc:
                if attempt == retries:
                    raise
                if log:
                    log(f"submit: {type(exc).__name__}: {exc}; retrying")
                time.sleep(delay)
                delay = min(delay * 2, 30)
                continue
            if r.status_code == 429 or r.status_code >= 500:
                if attempt == retries:
                    self._check(r)
                wait = float(r.headers.get("Retry-After") or delay)
                if log:
                    log(f"submit: HTTP {r.status_code} ({_detail(r)}); retrying in {wait:.0f} s")
                time.sleep(min(wait, 120))
                delay = min(delay * 2, 30)
                continue
            return self._check(r).json()
        raise AssertionError("unreachable")

    def get_job(self, job_id: str) -> dict:
        return self._check(self.http.get(f"/v1/jobs/{job_id}")).json()

    def list_jobs(self, **filters) -> dict:
        params = {k: v for k, v in filters.items() if v is not None}
        return self._check(self.http.get("/v1/jobs", params=params)).json()

    def cancel(self, job_id: str) -> dict:
        return self._check(self.http.post(f"/v1/jobs/{job_id}/cancel")).json()

    def events(self, job_id: str, after: int | None = None, *, reconnects: int = 20) -> Iterator[SseEvent]:
        """The job's events until its `end` event; reconnects with Last-Event-ID when the stream drops."""
        last_id = str(after) if after else None
        failures = 0
        retry_s = 2.0
        while True:
            headers = {"Accept": "text/event-stream"}
            if last_id is not None:
                headers["Last-Event-ID"] = last_id
            try:
                with self.http.stream("GET", f"/v1/jobs/{job_id}/events", headers=headers,
                                      timeout=httpx.Timeout(60.0, connect=10.0, read=90.0)) as r:
                    if r.status_code >= 400:
                        r.read()
                        self._check(r)
                    parser = _SseParser()
                    for line in r.iter_lines():
                        ev = parser.feed(line)
                        if ev is None:
                            continue
                        if ev.event == "retry":
                            retry_s = (ev.retry_ms or 2000) / 1000
                            continue
                        failures = 0
                        if ev.id is not None:
                            last_id = ev.id
                        yield ev
                        if ev.event == "end":
                            return
            except httpx.TransportError:
                pass
            failures += 1
            if failures > reconnects:
                raise ApiError(0, f"lost the event stream of job {job_id} {failures} times in a row")
            time.sleep(retry_s)

    def artifacts(self, job_id: str) -> list[dict]:
        return self._check(self.http.get(f"/v1/jobs/{job_id}/artifacts")).json()["items"]

    def download(self, job_id: str, name: str, dest_dir: str | Path) -> Path:
        rel = PurePosixPath(name)
        if rel.is_absolute() or ".." in rel.parts:
            raise ValueError(f"refusing artifact name {name!r}")
        dest = Path(dest_dir).joinpath(*rel.parts)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(dest.name + ".part")
        with self.http.stream("GET", f"/v1/jobs/{job_id}/artifacts/{name}") as r:
            if r.status_code >= 400:
                r.read()
                self._check(r)
            with tmp.open("wb") as out:
                for chunk in r.iter_bytes(256 * 1024):
                    out.write(chunk)
        tmp.replace(dest)
        return dest

    def download_all(self, job_id: str, dest_dir: str | Path) -> list[Path]:
        return [self.download(job_id, a["name"], dest_dir) for a in self.artifacts(job_id)]
