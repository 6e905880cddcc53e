"""Celery on Redis: the task `kernelopt.run_job(job_id)`, and the reaper loop of each worker.

Start one worker per GPU (`kernelopt worker` does this, pinning CUDA_VISIBLE_DEVICES):

    CUDA_VISIBLE_DEVICES=0 celery -A worker.celery_app worker --pool solo --concurrency 1 -n gpu0@%h -Q kernelopt

Delivery guarantees: the message carries only the job id; `acks_late` with a
prefetch of 1 means a message is acknowledged only after its job ended, so a
worker that dies mid-job leaves its message unacknowledged and Redis redelivers
it after the visibility timeout (set above the job time limit, so a job that is
merely long is never redelivered while it runs). A redelivered or duplicated
message finds the job no longer queued and does nothing: the database claim, not
the broker, decides who runs a job. Jobs of a dead worker are brought back much
sooner than the visibility timeout by the reaper (worker/reaper.py), which runs
as a thread in every worker's main process.

This module never imports torch: the engine runs in child processes only.
"""
from __future__ import annotations

import logging
import os
import socket
import tempfile
from pathlib import Path

from celery import Celery, signals

TASK_NAME = "kernelopt.run_job"
QUEUE = "kernelopt"

log = logging.getLogger("kernelopt.worker")


def visibility_timeout_s(settings) -> int:
    """Redis redelivers an unacknowledged message after this long: well above the job time limit."""
    return int(max(settings.job_time_limit_s * 2, settings.job_time_limit_s + 3600))


def make_celery(settings) -> Celery:
    """The Celery app for these settings (used by workers and, to send tasks, by the API)."""
    if not settings.broker_url:
        from kernelopt.service.settings import ConfigError

        raise ConfigError("KERNELOPT_BROKER_URL is not set: Celery workers need Redis "
                          "(without a broker, `kernelopt serve` runs jobs in-process instead)")
    app = Celery("kernelopt", broker=settings.broker_url, set_as_current=False)
    app.conf.update(
        task_default_queue=QUEUE,
        task_acks_late=True,
        # A pool child killed mid-task: acknowledge (do not requeue at once); the job's
        # fate is the reaper's decision, based on the database, not the broker's.
        task_reject_on_worker_lost=False,
        task_ignore_result=True,
        task_serializer="json",
        accept_content=["json"],
        worker_prefetch_multiplier=1,
        worker_concurrency=1,
        worker_max_tasks_per_child=50,
        worker_send_task_events=False,
        broker_connection_retry_on_startup=True,
        broker_transport_options={"visibility_timeout": visibility_timeout_s(settings)},
        # A lost Redis connection must not cancel the running job: it is in the database.
        worker_cancel_long_running_tasks_on_connection_loss=False,
    )

    @app.task(name=TASK_NAME, bind=True, acks_late=True, ignore_result=True, shared=False)
    def run_job(self, job_id: str) -> str | None:
        from kernelopt.worker.execute import execute_job

        return execute_job(job_id, settings, worker_id(self.request.hostname))

    return app


def worker_id(hostname: str | None = None) -> str:
    return f"{hostname or socket.gethostname()}/{os.getpid()}"


def _settings():
    from kernelopt.service.settings import get_settings

    return get_settings()


_app: Celery | None = None


def get_app() -> Celery:
    """The worker's app, from the process settings (created on first use, so that importing
    this module for its constants needs no broker)."""
    global _app
    if _app is None:
        _app = make_celery(_settings())
    return _app


def __getattr__(name: str):
    # `celery -A worker.celery_app` looks up `app` on this module.
    if name in ("app", "celery"):
        return get_app()
    raise AttributeError(name)

# --------------------------------------------------------------------------- reaper thread

_reaper = None


def alive_file() -> Path:
    """Touched by the reaper loop every few seconds; the container liveness probe checks its age
    (`find /tmp -maxdepth 1 -name 'kernelopt-worker-*.alive' -mmin -2`)."""
    return Path(tempfile.gettempdir()) / f"kernelopt-worker-{os.getpid()}.alive"


@signals.worker_ready.connect
def _start_reaper(sender=None, **_):
    """Every worker's main process runs a reaper loop (see worker/reaper.py)."""
    global _reaper
    from kernelopt.worker.dispatch import CeleryDispatcher
    from kernelopt.worker.reaper import ReaperThread

    settings = _settings()
    dispatcher = CeleryDispatcher(settings, app=get_app())
    _reaper = ReaperThread(settings, dispatcher.enqueue, resync=dispatcher.lost_queued_ids,
                           alive_file=alive_file())
    _reaper.start()
    log.info("reaper started: every %.0f s, heartbeat timeout %.0f s, max attempts %d",
             _reaper.interval_s, settings.heartbeat_timeout_s, settings.max_job_attempts)


@signals.worker_shutdown.connect
def _stop_reaper(sender=None, **_):
    if _reaper is not None:
        _reaper.stop()
        try:
            _reaper.alive_file.unlink()
        except (OSError, AttributeError):
            pass
