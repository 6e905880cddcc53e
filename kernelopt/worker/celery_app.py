"""Celery on Redis: the task `kernelopt.run_job(job_id)`, and the reaper loop of each worker.

Start one worker per GPU (`kernelopt worker` does this, pinning CUDA_VISIBLE_DEVICES):

    CUDA_VISIBLE_DEVICES=0 celery -A kernelopt.worker.celery_app worker --pool solo --concurrency 1 -n gpu0@%h -Q kernelopt

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
import tempfile
from pathlib import Path

from celery import Celery, signals

from kernelopt.service.settings import get_settings
from kernelopt.worker.broker import make_celery
from kernelopt.worker.dispatch import CeleryDispatcher
from kernelopt.worker.reaper import ReaperThread

log = logging.getLogger("kernelopt.worker")


def _settings():
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
    # `celery -A kernelopt.worker.celery_app` looks up `app` on this module.
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
