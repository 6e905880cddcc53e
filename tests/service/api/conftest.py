"""Fixtures for the API tests: an app on the test database (PostgreSQL and SQLite, through
tests/service/conftest.py's parametrized `settings`), a recording dispatcher, an authenticated
TestClient, a live uvicorn server on a free port, and a scripted worker that drives a job
through the real state machine (claim → events → finish) without running the engine.
"""
from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


class RecordingDispatcher:
    """Takes job ids like a queue would and never runs them (the tests play the worker)."""

    def __init__(self):
        self.enqueued: list[str] = []

    def enqueue(self, job_id: str) -> None:
        self.enqueued.append(job_id)


@dataclass
class Api:
    app: Any
    client: Any  # TestClient, authenticated as `team`
    settings: Any
    dispatcher: RecordingDispatcher
    team: Any
    key: str

    @property
    def sessionmaker(self):
        return self.app.state.sessionmaker

    def headers(self, key: str | None = None) -> dict:
        return {"Authorization": f"Bearer {key or self.key}"}

    def submit(self, content: bytes = b"print('hello')\n", *, filename: str = "model.py", options: str | None = None,
               tag: str | None = None, key: str | None = None, idempotency_key: str | None = None,
               weights: bytes | None = None):
        files = {"file": (filename, content, "text/x-python")}
        if weights is not None:
            files["weights"] = ("w.safetensors", weights, "application/octet-stream")
        data = {}
        if options is not None:
            data["options"] = options
        if tag is not None:
            data["tag"] = tag
        headers = self.headers(key)
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        return self.client.post("/v1/jobs", files=files, data=data, headers=headers)

    def new_team(self) -> tuple[Any, str]:
        from kernelopt.service.auth import create_api_key, create_team

        with self.sessionmaker() as s:
            team = create_team(s, f"team-{uuid.uuid4().hex[:12]}")
            return team, create_api_key(s, team.id)

    def count_jobs(self, team_id: int | None = None) -> int:
        from sqlalchemy import func, select

        from kernelopt.storage.models import Job

        q = select(func.count()).select_from(Job)
        if team_id is not None:
            q = q.where(Job.team_id == team_id)
        with self.sessionmaker() as s:
            return s.scalar(q)

    def count_blobs(self) -> int:
        root = Path(self.settings.blobs_dir)
        return sum(1 for p in root.rglob("*") if p.is_file()) if root.exists() else 0


def make_api(settings, team_key, **app_kwargs) -> Api:
    from fastapi.testclient import TestClient

    from kernelopt.api.app import create_app

    dispatcher = RecordingDispatcher()
    app_kwargs.setdefault("auth_cache_ttl_s", 0.0)
    app = create_app(settings, dispatcher, **app_kwargs)
    client = TestClient(app)
    return Api(app=app, client=client, settings=settings, dispatcher=dispatcher, team=team_key.team,
               key=team_key.key)


@pytest.fixture
def api(settings, team_key):
    a = make_api(settings, team_key)
    with a.client:
        yield a


class ScriptedWorker:
    """Drives a job through service.jobs exactly as a worker would, minus the engine."""

    def __init__(self, api: Api, worker_id: str = "test-worker"):
        self.api = api
        self.worker_id = worker_id

    def claim(self, job_id: str):
        from kernelopt.service.jobs import claim_job

        with self.api.sessionmaker() as s:
            job = claim_job(s, job_id, self.worker_id)
            assert job is not None, f"job {job_id} could not be claimed"
            return job

    def event(self, job_id: str, stage: str, message: str, kind: str = "progress", **data) -> int:
        from kernelopt.service.jobs import add_event, set_stage

        with self.api.sessionmaker() as s:
            set_stage(s, job_id, stage)
            return add_event(s, job_id, stage, kind, message, data)

    def finish(self, job_id: str, outcome: str = "fallback", speedup: float | None = 1.0,
               cause: str = "no-gpu: interpreter run", artifacts: dict[str, bytes] | None = None,
               tmp: Path | None = None, result: dict | None = None) -> None:
        """`result`: fields of the engine's result that replace the scripted ones (e.g. timing)."""
        from kernelopt.service.jobs import finish_job
        from kernelopt.storage.blobs import BlobStore

        files = []
        tmp = tmp or Path(self.api.settings.data_dir) / "scripted" / job_id
        for name, content in (artifacts or {}).items():
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
            files.append((name, path))
        result = {"outcome": outcome, "cause": cause, "speedup": speedup, "baseline_ms": 1.0,
                  "optimized_ms": (1.0 / speedup) if speedup else None, "noise_pct": 0.5, "precision": "strict",
                  "reduced_precision": False, "artifacts": sorted(artifacts or {}),
                  "stage_seconds": {"load": 0.1, "search": 1.5}, "error": None, **(result or {})}
        with self.api.sessionmaker() as s:
            assert finish_job(s, job_id, self.worker_id, result, files, BlobStore(self.api.settings.blobs_dir))
        report = json.loads((artifacts or {}).get("report.json") or b"{}")
        if report.get("llm") or report.get("agents"):  # as worker.execute._record_agents does after the finish
            from kernelopt.service.strategy_memory import record_job
            from kernelopt.storage.models import Job

            with self.api.sessionmaker() as s:
                team_id = s.get(Job, job_id).team_id
                record_job(s, team_id, job_id, report)

    def fail(self, job_id: str, error: str) -> None:
        from kernelopt.service.jobs import fail_job

        with self.api.sessionmaker() as s:
            assert fail_job(s, job_id, self.worker_id, error)

    def run(self, job_id: str, **finish) -> None:
        self.claim(job_id)
        self.event(job_id, "load", "importing the submission", kind="stage_started")
        self.event(job_id, "search", "candidate 1 passed", kind="progress", candidate=1)
        self.finish(job_id, **finish)


@pytest.fixture
def worker(api) -> ScriptedWorker:
    return ScriptedWorker(api)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """uvicorn serving an app in a thread on a free loopback port (real HTTP, real sockets)."""

    def __init__(self, app):
        import uvicorn

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", access_log=False,
                                lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="live-uvicorn", daemon=True)

    def __enter__(self) -> "LiveServer":
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(2)
        if self.thread.is_alive():  # an event stream a client left open: do not wait for it
            self.server.force_exit = True
            self.thread.join(10)


@pytest.fixture
def live(api):
    with LiveServer(api.app) as server:
        yield server
