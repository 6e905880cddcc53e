"""Fixtures for the worker tests: a database of their own, real Celery worker processes.

The worker tests get a PostgreSQL database of their own (not the session-wide
`pg_url`): the reaper of a worker re-enqueues every job it finds queued without a
message, and the API tests leave queued jobs behind on purpose.

Workers are real `celery -A worker.celery_app worker --pool solo` processes,
started with the test's KERNELOPT_* settings in their environment, logging to a
file that is printed when a test fails.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
KERNEL = REPO / "benchmarks" / "kernels" / "add_relu_kernel.py"
MODEL = REPO / "benchmarks" / "problems" / "level1" / "01_gelu_tanh.py"
# A small search: one plan of one candidate keeps a kernel job near 20 s on the interpreter.
FAST = {"iterations": 1, "plans_per_iteration": 1, "max_candidates_per_kernel": 2, "time_budget_s": 150}
UNIMPORTABLE = (b"import kernelopt_no_such_module_xyz\n\n"
                b"def launch(x):\n    return x\n\ndef reference(x):\n    return x\n\n"
                b"def get_inputs():\n    return []\n")


@pytest.fixture(scope="module")
def worker_db_url():
    from tests.service.conftest import fresh_postgres_database

    def dispose(url: str) -> None:
        from kernelopt.worker.execute import _factories

        for key in [k for k in _factories if k[1] == url]:
            _factories.pop(key).kw["bind"].dispose()

    with fresh_postgres_database("kernelopt_worker_test", on_drop=dispose) as url:
        yield url


@pytest.fixture
def broker(redis_url):
    """The test's Redis database, emptied: no message of an earlier test is left."""
    import redis

    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture
def wsettings(worker_db_url, redis_url, broker, tmp_path):
    """Settings shared by the test and its workers: short heartbeats so the reaper acts in seconds."""
    from kernelopt.service.settings import Settings

    return Settings(database_url=worker_db_url, broker_url=redis_url, data_dir=tmp_path / "data",
                    heartbeat_interval_s=1, heartbeat_timeout_s=6, max_job_attempts=3, job_time_limit_s=240)


def job_dir_removed(settings, job_id: str, timeout: float = 10.0) -> bool:
    """Whether the job's work directory is gone. The worker removes it right after the job's final
    transition, and a test may read the final status before that step: wait for it, `timeout` at most."""
    job_dir = Path(settings.jobs_dir) / job_id
    deadline = time.monotonic() + timeout
    while job_dir.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return not job_dir.exists()


def settings_env(settings) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "KERNELOPT_DATABASE_URL": settings.database_url or "",
        "KERNELOPT_BROKER_URL": settings.broker_url or "",
        "KERNELOPT_DATA_DIR": str(settings.data_dir),
        "KERNELOPT_HEARTBEAT_INTERVAL_S": str(settings.heartbeat_interval_s),
        "KERNELOPT_HEARTBEAT_TIMEOUT_S": str(settings.heartbeat_timeout_s),
        "KERNELOPT_MAX_JOB_ATTEMPTS": str(settings.max_job_attempts),
        "KERNELOPT_JOB_TIME_LIMIT_S": str(settings.job_time_limit_s),
        "KERNELOPT_MAX_ARTIFACT_BYTES": str(settings.max_artifact_bytes),
        "KERNELOPT_MAX_JOB_ARTIFACT_BYTES": str(settings.max_job_artifact_bytes),
        "PYTHONPATH": os.pathsep.join([str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                                     if p]),
    })
    return env


class CeleryWorker:
    """A real Celery worker process (solo pool, concurrency 1) with the test's settings."""

    def __init__(self, settings, log_path: Path, name: str):
        self.settings, self.log_path, self.name = settings, log_path, name
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> "CeleryWorker":
        from kernelopt.worker.broker import QUEUE

        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "kernelopt.worker.celery_app", "worker", "--pool", "solo",
             "--concurrency", "1", "--hostname", f"{self.name}@%h", "--queues", QUEUE, "--loglevel", "info",
             "--without-gossip", "--without-mingle", "--without-heartbeat"],
            cwd=str(REPO), env=settings_env(self.settings), stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"worker {self.name} exited with {self.proc.returncode}:\n{self.log()}")
            if b" ready." in self.log_path.read_bytes():
                return self
            time.sleep(0.2)
        raise AssertionError(f"worker {self.name} not ready after {timeout} s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]

    def descendants(self) -> list[int]:
        """Pids of every process below the worker (its engine child and what that started)."""
        found, todo = [], [self.proc.pid]
        while todo:
            pid = todo.pop()
            for task in Path(f"/proc/{pid}/task").glob("*"):
                try:
                    kids = [int(c) for c in (task / "children").read_text().split()]
                except (OSError, ValueError):
                    kids = []
                found += kids
                todo += kids
        return found

    def kill(self) -> None:
        """SIGKILL the worker process only (as the OOM killer or a lost node would)."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self, timeout: float = 60) -> int:
        """Warm shutdown (SIGTERM): the running job, if any, finishes first."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait(10)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(10)
        if getattr(self, "_log", None):
            self._log.close()


@pytest.fixture
def start_worker(wsettings, tmp_path, request):
    """Start real Celery workers; all are killed at the end, and their logs shown if the test failed."""
    started: list[CeleryWorker] = []

    def start(name: str | None = None) -> CeleryWorker:
        name = name or f"w{len(started)}"
        w = CeleryWorker(wsettings, tmp_path / f"{name}.log", name)
        started.append(w)
        return w.start()

    yield start
    for w in started:
        w.close()
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        for w in started:
            print(f"----- worker {w.name} log -----\n{w.log()}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call":
        item.rep_call = rep


@pytest.fixture
def team_id(wsettings) -> int:
    from kernelopt.service.auth import create_team
    from kernelopt.worker.execute import _scope

    with _scope(wsettings) as s:
        return create_team(s, f"team-{uuid.uuid4().hex[:12]}").id
