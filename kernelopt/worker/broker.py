"""The Celery app and its names: the task `kernelopt.run_job(job_id)` on the queue `kernelopt`.

Used by the workers (worker/celery_app.py) and, to send tasks, by the API's dispatcher
(worker/dispatch.py). Delivery guarantees are worker/celery_app.py's.
"""
from __future__ import annotations

import os
import socket

from celery import Celery

from kernelopt.service.settings import ConfigError
from kernelopt.worker.execute import execute_job

TASK_NAME = "kernelopt.run_job"
QUEUE = "kernelopt"


def visibility_timeout_s(settings) -> int:
    """Redis redelivers an unacknowledged message after this long: well above the job time limit."""
    return int(max(settings.job_time_limit_s * 2, settings.job_time_limit_s + 3600))


def make_celery(settings) -> Celery:
    """The Celery app for these settings (used by workers and, to send tasks, by the API)."""
    if not settings.broker_url:
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
        return execute_job(job_id, settings, worker_id(self.request.hostname))

    return app


def worker_id(hostname: str | None = None) -> str:
    return f"{hostname or socket.gethostname()}/{os.getpid()}"
