"""The reaper: re-queue jobs whose worker died, up to a limit, then mark them crashed.

A running job's worker heartbeats every `heartbeat_interval_s`. A job whose last
heartbeat is older than `heartbeat_timeout_s` has lost its worker (killed, OOM,
machine gone): `service.jobs.requeue_stale` puts it back to queued (or, after
`max_job_attempts` attempts, marks it crashed) and the reaper hands each re-queued
id to the dispatcher again.

It runs as a light loop thread inside every worker process (each Celery worker,
and the embedded dispatcher), not as a separate celery-beat service: there is
nothing extra to deploy, it keeps running as long as any worker runs, and
several reapers at once are safe because every transition is a conditional
UPDATE — only the reaper whose UPDATE re-queued a job re-enqueues it, and a
duplicate message would find nothing to claim anyway.
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Callable, Iterable

from kernelopt.service import jobs
from kernelopt.worker.execute import _scope

log = logging.getLogger("kernelopt.reaper")


def reaper_interval_s(settings) -> float:
    """How often the reaper looks: a third of the heartbeat timeout, within [1 s, 30 s]."""
    return min(30.0, max(1.0, settings.heartbeat_timeout_s / 3))


def reap_once(settings, enqueue: Callable[[str], None],
              resync: Callable[[], Iterable[str]] | None = None) -> tuple[list[str], list[str]]:
    """One pass: re-queue stale jobs, enqueue them again; returns (requeued, crashed).

    `resync`, when given, returns ids of queued jobs the broker has lost (see
    CeleryDispatcher.lost_queued_ids); they are enqueued again too.
    """
    with _scope(settings) as s:
        requeued, crashed = jobs.requeue_stale(s, settings.heartbeat_timeout_s, settings.max_job_attempts)
    for job_id in requeued:
        log.warning("job %s: worker stopped heartbeating; re-queued", job_id)
    for job_id in crashed:
        log.error("job %s: worker lost %d times; marked crashed", job_id, settings.max_job_attempts)
    again = list(requeued)
    if resync is not None:
        lost = [j for j in resync() if j not in again]
        for job_id in lost:
            log.warning("job %s: queued in the database but not in the broker; enqueued again", job_id)
        again += lost
    for job_id in again:
        enqueue(job_id)
    return requeued, crashed


class ReaperThread(threading.Thread):
    """Calls reap_once every reaper_interval_s until stopped; errors are logged, never fatal."""

    def __init__(self, settings, enqueue: Callable[[str], None],
                 resync: Callable[[], Iterable[str]] | None = None, interval_s: float | None = None,
                 alive_file: Path | None = None):
        super().__init__(name="kernelopt-reaper", daemon=True)
        self.settings, self.enqueue, self.resync = settings, enqueue, resync
        # Touched on every pass: a liveness probe checks its age (the Celery worker's main
        # process is alive and looping even while its solo pool runs a long job).
        self.alive_file = alive_file
        self.interval_s = interval_s or reaper_interval_s(settings)
        self._stop_event = threading.Event()

    def stop(self) -> None:
        self._stop_event.set()

    def run(self) -> None:
        while True:
            if self.alive_file is not None:
                try:
                    self.alive_file.touch()
                except OSError:
                    log.warning("could not touch %s", self.alive_file)
            if self._stop_event.wait(self.interval_s):
                break
            try:
                reap_once(self.settings, self.enqueue, self.resync)
            except Exception:  # noqa: BLE001 - database or broker down: try again next time
                log.exception("reaper pass failed; retrying in %.0f s", self.interval_s)
