"""Fixtures for the service tests: the machine's REAL PostgreSQL and Redis, and SQLite.

- pg_url      (session) a fresh, uniquely named PostgreSQL database, migrated to head, dropped at the end
- sqlite_url  (session) a SQLite file in a temp dir, migrated to head
- db_url      (function, parametrized "postgresql" / "sqlite") one of the two
- engine, session_factory (function, on db_url; engines are cached per URL for the session)
- session     (function) an ORM session on db_url, closed afterwards
- settings    (function) Settings with database_url=db_url, no broker, data_dir in tmp_path
- blobs       (function) BlobStore under settings.data_dir/blobs
- make_team   (function) make_team(name=None) -> TeamKey(team, key): a fresh team on db_url and its plaintext key
- team_key    (function) make_team(): one fresh team and its key
  (at teardown, jobs of these teams still queued or running are cancelled, so no
  later test's dispatcher or reaper picks up another test's leftovers)
- redis_url   (session) redis://127.0.0.1:6379/<n>: a db number claimed for this session, flushed at start and end

The databases live for the whole session, so tests isolate themselves by team
(every team_key is a new team) rather than by emptying tables.
Nothing is skipped: if PostgreSQL or Redis is down, the fixture fails and says
how to start them (scripts/services-up; scripts/test does it for you).
"""
from __future__ import annotations

import contextlib
import os
import uuid
from typing import NamedTuple

import pytest

PG_ADMIN = os.environ.get("KERNELOPT_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_BASE = os.environ.get("KERNELOPT_TEST_REDIS", "redis://127.0.0.1:6379")
DOWN_HINT = "start them with scripts/services-up (scripts/test does this before running the tests)"


@contextlib.contextmanager
def fresh_postgres_database(prefix: str, on_drop=None):
    """A new, uniquely named PostgreSQL database migrated to head; dropped afterwards.

    `on_drop(url)` runs first at teardown (to dispose of engines bound to it).
    """
    import psycopg

    from kernelopt.storage.db import upgrade_database

    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    try:
        admin = psycopg.connect(PG_ADMIN, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as e:
        pytest.fail(f"PostgreSQL is not reachable at {PG_ADMIN}: {e}\n{DOWN_HINT}", pytrace=False)
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        url = PG_ADMIN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1) + "/" + name
        try:
            upgrade_database(url)
            yield url
        finally:
            if on_drop is not None:
                on_drop(url)
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def pg_url():
    with fresh_postgres_database("kernelopt_test", on_drop=_dispose_engine) as url:
        yield url


@pytest.fixture(scope="session")
def sqlite_url(tmp_path_factory):
    from kernelopt.storage.db import upgrade_database

    url = f"sqlite:///{tmp_path_factory.mktemp('sqlite') / 'kernelopt.db'}"
    upgrade_database(url)
    yield url
    _dispose_engine(url)


@pytest.fixture(params=["postgresql", "sqlite"])
def db_url(request) -> str:
    return request.getfixturevalue("pg_url" if request.param == "postgresql" else "sqlite_url")


# One engine (and pool) per URL for the whole session: tests open many sessions.
_ENGINES: dict = {}


def stop_server(proc, log=None) -> None:
    """A server a test started (`serve`, `worker`): asked to stop, killed if it has not within 20 s; its log
    file closed."""
    import subprocess

    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if log is not None:
        log.close()


def run_admin(argv: list[str], monkeypatch, env: dict[str, str]) -> int:
    """`kernelopt <argv>` of the admin commands (teams, keys, db) in this process, with `env` set: its exit
    status (what it prints is for capsys)."""
    import argparse

    from kernelopt.cli import admin
    from kernelopt.service.settings import get_settings

    for k, v in env.items():
        monkeypatch.setenv(k, v)
    get_settings.cache_clear()
    parser = argparse.ArgumentParser(prog="kernelopt")
    admin.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    finally:
        get_settings.cache_clear()


def get_engine(url: str):
    from kernelopt.storage.db import make_engine

    if url not in _ENGINES:
        _ENGINES[url] = make_engine(url)
    return _ENGINES[url]


def _dispose_engine(url: str) -> None:
    engine = _ENGINES.pop(url, None)
    if engine is not None:
        engine.dispose()


@pytest.fixture
def engine(db_url):
    return get_engine(db_url)


@pytest.fixture
def session_factory(engine):
    from kernelopt.storage.db import make_sessionmaker

    return make_sessionmaker(engine)


@pytest.fixture
def session(session_factory):
    s = session_factory()
    yield s
    s.rollback()
    s.close()


@pytest.fixture
def settings(db_url, tmp_path):
    from kernelopt.service.settings import Settings

    return Settings(database_url=db_url, broker_url=None, data_dir=tmp_path / "data")


@pytest.fixture
def blobs(settings):
    from kernelopt.storage.blobs import BlobStore

    return BlobStore(settings.blobs_dir)


class TeamKey(NamedTuple):
    team: object  # storage.models.Team
    key: str


@pytest.fixture
def make_team(session_factory):
    from sqlalchemy import update

    from kernelopt.service.auth import create_api_key, create_team
    from kernelopt.storage.models import QUEUED, RUNNING, Job, utcnow

    team_ids: list[int] = []

    def make(name: str | None = None) -> TeamKey:
        with session_factory() as s:
            team = create_team(s, name or f"team-{uuid.uuid4().hex[:12]}")
            team_ids.append(team.id)
            return TeamKey(team, create_api_key(s, team.id))

    yield make
    if team_ids:
        with session_factory() as s:
            s.execute(update(Job).where(Job.team_id.in_(team_ids), Job.status.in_([QUEUED, RUNNING]))
                      .values(status="cancelled", finished_at=utcnow()))
            s.commit()


@pytest.fixture
def team_key(make_team) -> TeamKey:
    return make_team()


@pytest.fixture(scope="session")
def redis_url():
    import redis

    registry = redis.Redis.from_url(f"{REDIS_BASE}/0", socket_connect_timeout=5)
    try:
        registry.ping()
    except redis.RedisError as e:
        pytest.fail(f"Redis is not reachable at {REDIS_BASE}: {e}\n{DOWN_HINT}", pytrace=False)
    # Several test sessions may run at once on this machine: claim a db number
    # (1..15) in db 0 so no two sessions flush each other's queues.
    claimed = None
    for n in range(1, 16):
        if registry.set(f"kernelopt-test-db:{n}", os.getpid(), nx=True, ex=6 * 3600):
            claimed = n
            break
    if claimed is None:
        pytest.fail("all Redis test databases 1..15 are claimed by other test sessions "
                    "(stale claims expire after 6 h; or delete the keys kernelopt-test-db:* in db 0)", pytrace=False)
    url = f"{REDIS_BASE}/{claimed}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    try:
        yield url
    finally:
        client.flushdb()
        client.close()
        registry.delete(f"kernelopt-test-db:{claimed}")
        registry.close()
