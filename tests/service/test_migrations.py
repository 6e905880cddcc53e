"""The schema: `alembic upgrade head` on an empty database, and models == migrations, on both backends."""
from __future__ import annotations

import uuid

import psycopg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from kernelopt.storage.db import alembic_config, make_engine, upgrade_database
from kernelopt.storage.models import Base

from .conftest import PG_ADMIN

TABLES = {"teams", "api_keys", "jobs", "job_events", "artifacts", "alembic_version"}


def _head() -> str:
    heads = ScriptDirectory.from_config(alembic_config("sqlite://")).get_heads()
    assert len(heads) == 1, f"the migrations must have exactly one head, found {heads}"
    return heads[0]


@pytest.fixture(params=["postgresql", "sqlite"])
def empty_db_url(request, tmp_path):
    """A brand-new empty database (not the session's shared one)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'empty.db'}"
        return
    name = f"kernelopt_empty_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield PG_ADMIN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1) + "/" + name
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_upgrade_head_on_empty_database_then_down_and_up_again(empty_db_url):
    engine = make_engine(empty_db_url)
    try:
        assert set(inspect(engine).get_table_names()) == set()
        upgrade_database(empty_db_url)
        assert set(inspect(engine).get_table_names()) == TABLES
        with engine.connect() as conn:
            assert MigrationContext.configure(conn).get_current_revision() == _head()
        # Upgrading again is a no-op, and the downgrade path works too.
        upgrade_database(empty_db_url)
        from alembic import command

        command.downgrade(alembic_config(empty_db_url), "base")
        assert set(inspect(engine).get_table_names()) == {"alembic_version"}
        upgrade_database(empty_db_url)
        assert set(inspect(engine).get_table_names()) == TABLES
    finally:
        engine.dispose()


def test_models_match_migrations(db_url):
    """Autogenerate against the migrated database finds nothing to do: no drift."""
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"compare_type": True, "target_metadata": Base.metadata})
            diff = compare_metadata(ctx, Base.metadata)
        assert diff == [], f"models and migrations disagree on {engine.dialect.name}: {diff}"
    finally:
        engine.dispose()


def test_compare_detects_drift(db_url):
    """The check above is not vacuous: a model column the migrations lack is reported."""
    from sqlalchemy import Column, MetaData, String

    drifted = MetaData()
    for table in Base.metadata.tables.values():
        table.to_metadata(drifted)
    drifted.tables["jobs"].append_column(Column("not_migrated", String(10)))
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), drifted)
        assert [d[0] for d in diff] == ["add_column"] and diff[0][3].name == "not_migrated"
    finally:
        engine.dispose()
