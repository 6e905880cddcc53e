"""Prometheus metrics: requests by route template and status, latency, and jobs by status.

Each app owns its registry (tests build many apps in one process). Request counters are
per process; the jobs-by-status gauge is read from the database at scrape time, so it is
right whichever process is scraped. With several uvicorn workers and PROMETHEUS_MULTIPROC_DIR
set, the request metrics of all workers are aggregated (prometheus_client multiprocess mode).
"""
from __future__ import annotations

import os
import time
from typing import Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kernelopt.storage.models import STATUSES

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class JobsByStatusCollector:
    def __init__(self, count_by_status: Callable[[], dict[str, int]]):
        self.count_by_status = count_by_status

    def collect(self):
        gauge = GaugeMetricFamily("kernelopt_jobs", "jobs in the database by status", labels=["status"])
        try:
            counts = self.count_by_status()
        except Exception:  # a scrape must not fail because the database blinked
            counts = {}
        for status in STATUSES:
            gauge.add_metric([status], counts.get(status, 0))
        yield gauge


class Metrics:
    def __init__(self, count_by_status: Callable[[], dict[str, int]]):
        self.multiprocess = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter("kernelopt_http_requests_total", "HTTP requests by method, route and status",
                                ["method", "route", "status"], registry=None if self.multiprocess else self.registry)
        self.latency = Histogram("kernelopt_http_request_duration_seconds", "HTTP request latency by route",
                                 ["method", "route"], buckets=LATENCY_BUCKETS,
                                 registry=None if self.multiprocess else self.registry)
        self.jobs_submitted = Counter("kernelopt_jobs_submitted_total", "jobs accepted by this API process",
                                      registry=None if self.multiprocess else self.registry)
        self.registry.register(JobsByStatusCollector(count_by_status))

    def render(self) -> tuple[bytes, str]:
        if self.multiprocess:
            from prometheus_client import multiprocess

            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
            return generate_latest(registry) + generate_latest(self.registry), CONTENT_TYPE_LATEST
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class MetricsMiddleware:
    """Pure ASGI middleware (no BaseHTTPMiddleware: it would buffer the SSE streams)."""

    def __init__(self, app: ASGIApp, metrics: Metrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status_code = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status_code
            if message["type"] == "http.response.start":
                status_code = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            method = scope.get("method", "GET")
            self.metrics.requests.labels(method, template, str(status_code)).inc()
            self.metrics.latency.labels(method, template).observe(time.perf_counter() - start)
