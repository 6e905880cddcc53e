"""Dependencies of the API, as Annotated aliases (FastAPI full-stack template style).

SessionDep   a SQLAlchemy session from the app's pooled engine (one engine per process)
TeamDep      the team behind `Authorization: Bearer <key>` (401 with WWW-Authenticate otherwise)
SettingsDep  the service settings the app was created with
DispatcherDep the queue the API hands job ids to (it never runs submitted code itself)
"""
from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Iterator, TypeVar

import anyio
import anyio.to_thread
from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from kernelopt.service import auth
from kernelopt.service.settings import Settings

T = TypeVar("T")


@dataclass(frozen=True)
class TeamRef:
    """The authenticated team, detached from any session."""

    id: int
    name: str


class AuthCache:
    """A short-lived cache of key-hash → team, so status polls skip the key lookup.

    Only successful authentications are cached, keyed by the sha256 of the key (the key itself
    is never kept). A revoked key stops working within `ttl_s` seconds.
    """

    def __init__(self, ttl_s: float = 10.0, max_entries: int = 10_000):
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._entries: dict[str, tuple[float, TeamRef]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def digest(key: str) -> str:
        return hashlib.sha256(key.encode()).hexdigest()

    def get(self, digest: str) -> TeamRef | None:
        if self.ttl_s <= 0:
            return None
        hit = self._entries.get(digest)
        if hit is None or hit[0] < time.monotonic():
            return None
        return hit[1]

    def put(self, digest: str, team: TeamRef) -> None:
        if self.ttl_s <= 0:
            return
        with self._lock:
            if len(self._entries) >= self.max_entries:
                now = time.monotonic()
                self._entries = {k: v for k, v in self._entries.items() if v[0] >= now}
                if len(self._entries) >= self.max_entries:
                    self._entries.clear()
            self._entries[digest] = (time.monotonic() + self.ttl_s, team)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def get_settings_dep(request: Request) -> Settings:
    return request.app.state.settings


def get_session(request: Request) -> Iterator[Session]:
    session = request.app.state.sessionmaker()
    try:
        yield session
    finally:
        session.close()  # rolls back whatever a handler did not commit


def get_dispatcher(request: Request) -> Any:
    return request.app.state.dispatcher


_bearer = HTTPBearer(auto_error=False, description="a team API key: `Authorization: Bearer ko_...`")


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(status.HTTP_401_UNAUTHORIZED, detail=detail, headers={"WWW-Authenticate": "Bearer"})


async def get_team(request: Request,
                   credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> TeamRef:
    """Async on purpose: a cached key (every poll after the first) costs no thread hop and no query."""
    if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
        raise _unauthorized("missing API key: send `Authorization: Bearer <key>`")
    key = credentials.credentials
    cache: AuthCache = request.app.state.auth_cache
    digest = cache.digest(key)
    team = cache.get(digest)
    if team is not None:
        return team

    def lookup() -> TeamRef | None:
        with request.app.state.read_sessionmaker() as session:
            found = auth.authenticate(session, key)
            return TeamRef(id=found.id, name=found.name) if found is not None else None

    team = await in_db_thread(request, lookup)
    if team is None:
        raise _unauthorized("invalid or revoked API key")
    cache.put(digest, team)
    return team


async def in_db_thread(request: Request, fn: Callable[..., T], *args: Any) -> T:
    """Run blocking database work in a worker thread, at most `db_threads` at once.

    Bounding the threads matters under load: dozens of threads each doing a few hundred
    microseconds of Python fight over the GIL and throughput collapses; a few threads with
    the rest of the requests waiting (cheaply, as coroutines) keep p99 low.
    """
    return await anyio.to_thread.run_sync(fn, *args, limiter=db_limiter(request.app))


def db_limiter(app: Any) -> anyio.CapacityLimiter:
    loop = asyncio.get_running_loop()
    limiter = app.state.db_limiters.get(loop)
    if limiter is None:
        limiter = app.state.db_limiters[loop] = anyio.CapacityLimiter(app.state.db_threads)
    return limiter


async def read_db(request: Request, fn: Callable[[Session], T]) -> T:
    """Run `fn(session)` in the threadpool with a read-only session (one thread hop per request;
    on PostgreSQL an autocommit connection, so a read is one round trip with no BEGIN/ROLLBACK)."""

    def call() -> T:
        with request.app.state.read_sessionmaker() as session:
            return fn(session)

    return await in_db_thread(request, call)


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
SessionDep = Annotated[Session, Depends(get_session)]
TeamDep = Annotated[TeamRef, Depends(get_team)]
DispatcherDep = Annotated[Any, Depends(get_dispatcher)]
