"""How the API hands a job to the workers: a Celery message, or an in-process slot.

    class Dispatcher(Protocol): def enqueue(job_id: str) -> None

- CeleryDispatcher: a Celery message carrying only the job id, on Redis; the
  workers (`kernelopt worker`) claim the job in the database.
- EmbeddedDispatcher: no broker. In-process threads, one per visible GPU (probed
  in a child process: the server never initialises CUDA) or one CPU slot. Each
  slot takes the oldest queued job from the database (the database is the queue:
  nothing is lost on restart), runs the same `execute_job` as a Celery worker with
  its GPU pinned through CUDA_VISIBLE_DEVICES in the engine child's environment,
  and sleeps until `enqueue` wakes it or a poll interval passes. It also runs the
  reaper loop.

`make_dispatcher(settings)` picks Celery when a database and a broker are both
configured, the embedded dispatcher otherwise.
"""
from __future__ import annotations

import base64
import json
import logging
import os
import socket
import threading
from datetime import datetime, timedelta, timezone
from typing import Protocol, runtime_checkable

from sqlalchemy import select

from kernelopt.isolation import ChildError
from kernelopt.pipeline.device import probe_device, share_compile_threads
from kernelopt.service import job_queries
from kernelopt.storage.models import QUEUED, Job
from kernelopt.worker.broker import QUEUE, TASK_NAME, make_celery
from kernelopt.worker.execute import _scope, execute_job
from kernelopt.worker.reaper import ReaperThread

log = logging.getLogger("kernelopt.dispatch")


@runtime_checkable
class Dispatcher(Protocol):
    def enqueue(self, job_id: str) -> None: ...


# --------------------------------------------------------------------------- Celery

class CeleryDispatcher:
    """Sends `kernelopt.run_job(job_id)` to the Redis queue."""

    def __init__(self, settings, app=None):
        self.settings = settings
        self.app = app if app is not None else make_celery(settings)

    def enqueue(self, job_id: str) -> None:
        self.app.send_task(TASK_NAME, args=[job_id], queue=QUEUE, retry=True,
                           retry_policy={"max_retries": 3, "interval_start": 0.2, "interval_step": 0.5,
                                         "interval_max": 2})

    def close(self) -> None:
        self.app.close()

    # -- reconciliation: the database is the system of record -------------------------------

    def queued_in_broker(self) -> set[str]:
        """Job ids of the messages waiting in Redis or reserved by a worker (not yet acknowledged)."""
        import redis

        ids: set[str] = set()
        client = redis.Redis.from_url(self.settings.broker_url)
        try:
            raw = list(client.lrange(QUEUE, 0, -1))
            for key in client.scan_iter(match=f"{QUEUE}\x06\x16*"):  # kombu's priority sub-queues
                raw += client.lrange(key, 0, -1)
            for value in client.hvals("unacked"):
                try:
                    raw.append(json.dumps(json.loads(value)[0]))
                except (ValueError, IndexError, TypeError):
                    pass
        finally:
            client.close()
        for item in raw:
            job_id = _job_id_of_message(item)
            if job_id:
                ids.add(job_id)
        return ids

    def lost_queued_ids(self) -> list[str]:
        """Queued jobs with no message in the broker (Redis restarted without persistence, an
        enqueue that failed after the job was stored). Only jobs queued for longer than the
        heartbeat timeout count, so a job whose message is being sent right now is left alone."""
        cutoff = datetime.now(timezone.utc) - timedelta(seconds=self.settings.heartbeat_timeout_s)
        with _scope(self.settings) as s:
            queued = list(s.execute(select(Job.id).where(Job.status == QUEUED, Job.created_at < cutoff)
                                    .order_by(Job.created_at).limit(1000)).scalars())
        if not queued:
            return []
        present = self.queued_in_broker()
        return [j for j in queued if j not in present]


def _job_id_of_message(item) -> str | None:
    try:
        msg = json.loads(item)
        if msg.get("headers", {}).get("task") not in (None, "kernelopt.run_job"):
            return None
        body = msg["body"]
        if msg.get("properties", {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        payload = json.loads(body)
        args = payload[0] if isinstance(payload, list) else payload.get("args", [])
        return str(args[0]) if args else None
    except (ValueError, KeyError, TypeError, IndexError):
        return None


# --------------------------------------------------------------------------- embedded

class EmbeddedDispatcher:
    """In-process slots (one per visible GPU, or one CPU slot) running queued jobs from the database."""

    def __init__(self, settings, slots: list[dict[str, str]] | None = None, poll_s: float = 2.0,
                 start: bool = True):
        self.settings = settings
        self.poll_s = poll_s
        self._slots_env = slots
        self._cond = threading.Condition()
        self._taken: set[str] = set()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._reaper: ReaperThread | None = None
        self._started = threading.Event()
        self.worker_prefix = f"embedded-{socket.gethostname()}-{os.getpid()}"
        if start:
            self.start()

    # -- Dispatcher ----------------------------------------------------------------------------

    def enqueue(self, job_id: str) -> None:
        with self._cond:
            self._cond.notify()

    # -- life cycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Probe the GPUs in a child (in the background: the API starts at once) and start the slots."""
        threading.Thread(target=self._start_slots, name="embedded-start", daemon=True).start()

    def wait_started(self, timeout: float | None = None) -> bool:
        return self._started.wait(timeout)

    @property
    def slots(self) -> list[dict[str, str]]:
        return list(self._slots_env or [])

    def _start_slots(self) -> None:
        if self._slots_env is None:
            self._slots_env = detect_slots()
        for i, env in enumerate(self._slots_env):
            t = threading.Thread(target=self._slot_loop, args=(i, env), name=f"embedded-slot-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        self._reaper = ReaperThread(self.settings, self.enqueue)
        self._reaper.start()
        log.info("embedded dispatcher: %d slot(s) %s", len(self._slots_env), self._slots_env)
        self._started.set()

    def stop(self, timeout: float | None = 0) -> None:
        """Stop taking jobs. A running job finishes in its thread (or, if the process exits
        first, is re-queued by the next reaper once its heartbeat stops)."""
        self._stopping.set()
        if self._reaper is not None:
            self._reaper.stop()
        with self._cond:
            self._cond.notify_all()
        if timeout:
            for t in self._threads:
                t.join(timeout)

    close = stop

    # -- a slot ---------------------------------------------------------------------------------

    def _next_job(self) -> str | None:
        with _scope(self.settings) as s:
            ids = job_queries.queued_job_ids(s, limit=len(self._threads) + 8)
        with self._cond:
            for job_id in ids:
                if job_id not in self._taken:
                    self._taken.add(job_id)
                    return job_id
        return None

    def _slot_loop(self, index: int, env: dict[str, str]) -> None:
        worker_id = f"{self.worker_prefix}-slot{index}"
        while not self._stopping.is_set():
            try:
                job_id = self._next_job()
            except Exception:  # noqa: BLE001 - database briefly unavailable
                log.exception("embedded slot %d: could not look for queued jobs", index)
                job_id = None
            if job_id is None:
                with self._cond:
                    self._cond.wait(self.poll_s)
                continue
            try:
                execute_job(job_id, self.settings, worker_id, env=dict(env) or None)
            except Exception:  # noqa: BLE001 - execute_job already recorded what it could
                log.exception("embedded slot %d: job %s", index, job_id)
            finally:
                with self._cond:
                    self._taken.discard(job_id)


def detect_slots(gpus: str | None = None) -> list[dict[str, str]]:
    """One environment per slot: CUDA_VISIBLE_DEVICES=<i> per visible GPU, or one CPU slot ({}).

    The GPUs are counted in a child process (pipeline.device.probe_device), so the
    caller never initialises CUDA. `gpus` narrows the choice: "all", a count "N",
    or a list "0,2".
    """
    ids = select_gpus(gpus)
    return share_compile_threads([{"CUDA_VISIBLE_DEVICES": pin_value(i)} for i in ids] if ids else [{}])


def pin_value(index: int) -> str:
    """CUDA_VISIBLE_DEVICES for the index-th visible GPU, respecting a pinning already in place
    (with CUDA_VISIBLE_DEVICES=2,3 in our environment, index 0 is GPU "2")."""
    inherited = [x.strip() for x in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if x.strip()]
    return inherited[index] if index < len(inherited) else str(index)


def select_gpus(gpus: str | None = None) -> list[int]:
    """The GPU indices to use, from "all" (default), "N" (the first N) or "0,2" (those)."""
    spec = (gpus or "all").strip().lower()
    if "," in spec:
        try:
            wanted = sorted({int(x) for x in spec.split(",") if x.strip()})
        except ValueError:
            raise ValueError(f"--gpus must be 'all', a count or a list like 0,1; got {gpus!r}") from None
    elif spec == "all":
        wanted = None
    else:
        try:
            n = int(spec)
        except ValueError:
            raise ValueError(f"--gpus must be 'all', a count or a list like 0,1; got {gpus!r}") from None
        if n < 0:
            raise ValueError("--gpus count must be >= 0")
        wanted = list(range(n))
    count = visible_gpu_count() if wanted != [] else 0
    if wanted is None:
        return list(range(count))
    missing = [i for i in wanted if i >= count or i < 0]
    if missing:
        raise ValueError(f"GPU(s) {missing} requested but {count} visible")
    return wanted


def visible_gpu_count() -> int:
    try:
        info = probe_device()
    except ChildError as exc:
        log.warning("GPU probe failed (%s): running without a GPU", exc)
        return 0
    return info.count if info.cuda else 0


# --------------------------------------------------------------------------- choice

def make_dispatcher(settings) -> Dispatcher:
    """Celery when both a database and a broker are configured; the embedded dispatcher otherwise."""
    if settings.embedded:
        return EmbeddedDispatcher(settings)
    return CeleryDispatcher(settings)
