"""The API application: `create_app(settings=None, dispatcher=None)`.

One engine (connection pool), one blob store and one dispatcher per process, created here
and shared through `app.state`; handlers get them through api/deps.py. The API only stores
bytes and enqueues job ids: it never imports or runs submitted code.
"""
from __future__ import annotations

import logging
import threading
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request, status
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from sqlalchemy import func, select
from sqlalchemy.exc import DataError, OperationalError

from kernelopt.api.deps import AuthCache
from kernelopt.api.metrics import Metrics, MetricsMiddleware
from kernelopt.api.options import InvalidOptions
from kernelopt.api.routes import health, jobs, stats
from kernelopt.api.sse import KEEPALIVE_S, RESYNC_S
from kernelopt.api.stream_limit import StreamSlots
from kernelopt.api.ui.routes import STATIC_DIR
from kernelopt.api.ui.routes import router as ui_router
from kernelopt.service.settings import Settings, get_settings
from kernelopt.storage.blobs import BlobStore
from kernelopt.storage.db import make_engine, make_sessionmaker
from kernelopt.storage.models import Job
from kernelopt.worker.dispatch import make_dispatcher

log = logging.getLogger("kernelopt.api")

API_VERSION = "1.0.0"
DOCS_ASSETS = "/docs-assets"  # where the Swagger UI and ReDoc files are served
DESCRIPTION = """Verified optimization of torch.compile's Triton kernels, as a service.

Submit a model or kernel file (`POST /v1/jobs`), follow it (`GET /v1/jobs/{id}`, or live with
Server-Sent Events at `/v1/jobs/{id}/events`) and download its artifacts. Authenticate with
`Authorization: Bearer <team API key>`; a team sees only its own jobs.
"""


class _LazyDispatcher:
    """Creates the configured dispatcher on first use (Celery when a broker is set, else in-process)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self._dispatcher: Any = None
        self._lock = threading.Lock()

    def get(self) -> Any:
        if self._dispatcher is None:
            with self._lock:
                if self._dispatcher is None:
                    self._dispatcher = make_dispatcher(self.settings)  # starts its slots, if any
        return self._dispatcher

    def enqueue(self, job_id: str) -> None:
        self.get().enqueue(job_id)

    def close(self) -> None:
        if self._dispatcher is not None:
            for name in ("close", "stop", "shutdown"):
                fn = getattr(self._dispatcher, name, None)
                if callable(fn):
                    fn()
                    break


def create_app(settings: Settings | None = None, dispatcher: Any = None, *,
               auth_cache_ttl_s: float | None = None, sse_resync_interval_s: float = RESYNC_S,
               sse_keepalive_s: float = KEEPALIVE_S,
               db_threads: int | None = None) -> FastAPI:
    settings = settings or get_settings()
    url = settings.effective_database_url
    if url.startswith("sqlite"):
        engine = make_engine(url)
        read_engine = engine
    else:
        # No pre-ping: it would double the round trips of every request. A connection broken by a
        # database restart fails one request with 503 and SQLAlchemy then refreshes the pool.
        pool = {"pool_size": 20, "max_overflow": 20, "pool_timeout": 10, "pool_pre_ping": False,
                "pool_recycle": 1800}
        engine = make_engine(url, **pool)
        # Reads (status polls, lists, auth) on autocommit connections: one round trip per query,
        # no BEGIN, and no ROLLBACK when the connection goes back to the pool.
        read_engine = make_engine(url, isolation_level="AUTOCOMMIT", **pool)
    sessionmaker = make_sessionmaker(engine)
    read_sessionmaker = make_sessionmaker(read_engine)
    own_dispatcher = _LazyDispatcher(settings) if dispatcher is None else None

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if own_dispatcher is not None:
            # Start the embedded slots now, so jobs queued before a restart are picked up.
            from starlette.concurrency import run_in_threadpool

            await run_in_threadpool(own_dispatcher.get)
        try:
            yield
        finally:
            for hub in list(app.state.sse_hubs.values()):
                hub.shutdown()
            await app.state.stream_slots.close()
            if own_dispatcher is not None:
                own_dispatcher.close()
            engine.dispose()
            read_engine.dispose()

    # /docs and /redoc with their scripts and styles served from the package (DOCS_ASSETS), not a CDN:
    # they work offline and behind a firewall.
    app = FastAPIOffline(title="KernelOPT", version=API_VERSION, description=DESCRIPTION, lifespan=lifespan,
                         static_url=DOCS_ASSETS)

    def count_by_status() -> dict[str, int]:
        with read_sessionmaker() as s:
            return {st: n for st, n in s.execute(select(Job.status, func.count()).group_by(Job.status))}

    broker_client = None

    def broker_ping() -> None:
        nonlocal broker_client
        import redis

        if broker_client is None:
            assert settings.broker_url is not None  # /readyz pings only a configured broker
            broker_client = redis.Redis.from_url(settings.broker_url, socket_timeout=2, socket_connect_timeout=2)
        broker_client.ping()

    metrics = Metrics(count_by_status)
    app.state.settings = settings
    app.state.engine = engine
    app.state.sessionmaker = sessionmaker
    app.state.read_sessionmaker = read_sessionmaker
    app.state.read_engine = read_engine
    app.state.blobs = BlobStore(settings.blobs_dir)
    app.state.dispatcher = dispatcher if dispatcher is not None else own_dispatcher
    app.state.auth_cache = AuthCache(ttl_s=settings.auth_cache_ttl_s if auth_cache_ttl_s is None else auth_cache_ttl_s)
    app.state.metrics = metrics
    app.state.broker_ping = broker_ping
    # Event streams: one hub per event loop, fed by this process's one job-change subscription
    # (api.sse, service.notify), and the per-team cap on open streams (api.stream_limit).
    app.state.sse_resync_interval_s = sse_resync_interval_s
    app.state.sse_keepalive_s = sse_keepalive_s
    app.state.sse_hubs = {}
    app.state.stream_slots = StreamSlots(settings.max_sse_streams_per_team, settings.broker_url)
    # Threads doing database work at once (see api.deps.in_db_thread); the pool has room for them.
    app.state.db_threads = db_threads or settings.api_db_threads
    app.state.db_limiters = {}  # one per event loop (tests drive one app from two loops)

    app.add_middleware(MetricsMiddleware, metrics=metrics)

    @app.exception_handler(OperationalError)
    async def database_unavailable(request: Request, exc: OperationalError):
        log.error("database error on %s %s: %s", request.method, request.url.path, exc)
        return JSONResponse({"detail": "the database is unavailable; retry shortly"},
                            status_code=status.HTTP_503_SERVICE_UNAVAILABLE, headers={"Retry-After": "5"})

    @app.exception_handler(DataError)
    async def bad_data(request: Request, exc: DataError):
        # Input the database refuses (a value it cannot store): the client's error, not ours.
        log.warning("database refused input on %s %s: %s", request.method, request.url.path, exc.orig)
        return JSONResponse({"detail": f"invalid input: {str(exc.orig).splitlines()[0] if exc.orig else 'refused'}"},
                            status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)

    @app.exception_handler(InvalidOptions)
    async def invalid_options(request: Request, exc: InvalidOptions):
        # `detail` for humans (one line, every bad option named), `errors` for programs.
        return JSONResponse({"detail": str(exc), "errors": exc.errors},
                            status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception):
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse({"detail": f"internal error ({type(exc).__name__}); it has been logged"},
                            status_code=status.HTTP_500_INTERNAL_SERVER_ERROR)

    @app.get("/", include_in_schema=False)
    async def root() -> dict:
        return {"name": "KernelOPT", "version": API_VERSION, "docs": "/docs", "openapi": "/openapi.json",
                "jobs": "/v1/jobs"}

    app.include_router(health.router)
    app.include_router(jobs.router)
    app.include_router(stats.router)
    # The team dashboard (api/ui): pages under /ui, its vendored static files under /ui/static.
    app.mount("/ui/static", StaticFiles(directory=STATIC_DIR), name="ui-static")
    app.include_router(ui_router)
    return app
