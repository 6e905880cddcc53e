"""Alembic environment: the models' metadata, the URL from -x url= / config / settings."""
from __future__ import annotations

from logging.config import fileConfig

from alembic import context
from sqlalchemy import pool

from kernelopt.service.settings import get_settings
from kernelopt.storage.db import make_engine
from kernelopt.storage.models import Base, UTCDateTime

config = context.config
# Configure logging only for the `alembic` command line; programmatic callers
# (storage.db.upgrade_database: tests, `kernelopt db upgrade`) keep their own.
if config.config_file_name is not None and config.attributes.get("configure_logger", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = Base.metadata


def _url() -> str:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    if url:
        return url
    return get_settings().effective_database_url


def _render_item(type_, obj, autogen_context):
    # Migrations spell the portable base type, so they never import application code.
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def _configure(dialect: str, **kw) -> None:
    context.configure(
        target_metadata=target_metadata,
        render_item=_render_item,
        compare_type=True,
        # SQLite cannot ALTER most things; batch mode rebuilds the table instead.
        render_as_batch=dialect == "sqlite",
        **kw,
    )


def run_migrations_offline() -> None:
    url = _url()
    _configure(url.split(":", 1)[0].split("+", 1)[0], url=url, literal_binds=True,
               dialect_opts={"paramstyle": "named"})
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = make_engine(_url(), poolclass=pool.NullPool)
    try:
        with engine.connect() as connection:
            _configure(connection.dialect.name, connection=connection)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
