"""Engines, sessions and schema upgrades for PostgreSQL and the embedded SQLite default."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"  # kernelopt.migrations, beside storage


def _sqlite_file(url: str) -> Path | None:
    path = url.split("///", 1)[1] if "///" in url else ""
    return Path(path) if path and path != ":memory:" else None


def make_engine(url: str, **kwargs) -> Engine:
    if url.startswith("sqlite"):
        file = _sqlite_file(url)
        if file is not None:
            file.parent.mkdir(parents=True, exist_ok=True)
        # The embedded server uses the engine from several threads (API + dispatcher slots).
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30}, **kwargs)

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record):
            cur = dbapi_conn.cursor()
            # WAL: readers (status polls, SSE) never block the worker's writes.
            cur.execute("PRAGMA journal_mode=WAL")
            # NORMAL (with WAL): a commit appends to the WAL without an fsync; checkpoints
            # fsync. A crash of the process loses nothing; a power cut may lose the last
            # commits. FULL made every heartbeat wait behind the fsync of a large blob
            # being stored on the same disk (a 2 s stall, longer than a short heartbeat
            # timeout, seen on the 2-core CI box).
            cur.execute("PRAGMA synchronous=NORMAL")
            # Writers queue instead of failing with "database is locked".
            cur.execute("PRAGMA busy_timeout=30000")
            # SQLite ignores foreign keys unless asked, per connection.
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]  # psycopg 3, not psycopg2
    kwargs.setdefault("pool_pre_ping", True)  # survive a database restart without a failed request
    return create_engine(url, **kwargs)


def redact(url: str) -> str:
    """The URL with its password hidden (for messages and logs)."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL SQLAlchemy can parse: say nothing of it
        return "(unparsable URL)"


def database_problem(url: str, timeout_s: int = 5) -> str | None:
    """Why no connection to the database at `url` opens (on one line, the driver's own words), or None.

    PostgreSQL is given `timeout_s` to answer (a host that drops the packets), so a caller
    refusing to start on an unreachable database says so within seconds.
    """
    from sqlalchemy.exc import SQLAlchemyError

    kwargs: dict = {} if url.startswith("sqlite") else {"connect_args": {"connect_timeout": timeout_s}}
    try:
        engine = make_engine(url, **kwargs)
    except (SQLAlchemyError, ImportError, ValueError, OSError) as exc:
        return " ".join(str(exc).split())
    try:
        with engine.connect():
            return None
    except SQLAlchemyError as exc:
        return " ".join(str(getattr(exc, "orig", None) or exc).split())
    finally:
        engine.dispose()


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    # expire_on_commit=False: service.jobs commits its own transitions and hands the
    # Job back; callers read its fields after the commit without another round trip.
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session that commits on success, rolls back on error, and always closes."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def alembic_config(url: str):
    from alembic.config import Config

    # The migrations are package data beside this package; no ini file is needed (the checkout's
    # alembic.ini is for running `alembic` by hand).
    cfg = Config()
    cfg.attributes["configure_logger"] = False  # keep the caller's logging as it is
    cfg.set_main_option("script_location", str(MIGRATIONS))
    # ConfigParser interpolation would choke on '%' in passwords.
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade_database(url: str, revision: str = "head") -> None:
    """Bring the schema at `url` up to `revision` (idempotent)."""
    from alembic import command

    if url.startswith("sqlite"):
        file = _sqlite_file(url)
        if file is not None:
            file.parent.mkdir(parents=True, exist_ok=True)
    command.upgrade(alembic_config(url), revision)
