"""API keys, settings, and the admin commands (teams create, keys create, db upgrade)."""
from __future__ import annotations

import uuid

import psycopg
import pytest
from sqlalchemy import inspect, select

from kernelopt.service import auth
from kernelopt.service.settings import ConfigError, Settings, get_settings
from kernelopt.storage.db import make_engine, make_sessionmaker
from kernelopt.storage.models import ApiKey

from .conftest import PG_ADMIN, run_admin


def test_keys_are_hashed_scoped_and_revocable(session, make_team):
    a, b = make_team(), make_team()
    assert a.key.startswith("ko_") and len(a.key) == 46
    assert auth.authenticate(session, a.key).id == a.team.id
    assert auth.authenticate(session, b.key).id == b.team.id
    stored = session.scalar(select(ApiKey).where(ApiKey.team_id == a.team.id))
    assert stored.key_hash == auth.hash_key(a.key) and a.key not in (stored.key_hash, stored.prefix)
    assert stored.prefix == a.key[:8]
    for wrong in (None, "", a.key[:-1], a.key + "x", a.key[:-1] + ("A" if a.key[-1] != "A" else "B"),
                  "Bearer " + a.key, "x" * 1000):
        assert auth.authenticate(session, wrong) is None
    second = auth.create_api_key(session, a.team.id)
    assert second != a.key and auth.authenticate(session, second).id == a.team.id
    assert auth.revoke_api_key(session, a.key)
    assert auth.authenticate(session, a.key) is None and auth.authenticate(session, second).id == a.team.id
    assert not auth.revoke_api_key(session, a.key)


def test_team_names_are_unique(session):
    name = f"team-{uuid.uuid4().hex[:8]}"
    auth.create_team(session, name)
    with pytest.raises(auth.TeamExists):
        auth.create_team(session, name)
    with pytest.raises(ValueError):
        auth.create_team(session, "   ")
    with pytest.raises(ValueError):
        auth.create_api_key(session, 10**9)
    assert auth.get_team_by_name(session, name).name == name


def test_settings_from_environment(monkeypatch, tmp_path):
    for var in ("DATABASE_URL", "BROKER_URL"):
        monkeypatch.delenv(f"KERNELOPT_{var}", raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env
    monkeypatch.setenv("KERNELOPT_DATA_DIR", str(tmp_path / "d"))
    s = Settings()
    assert s.embedded and s.effective_database_url == f"sqlite:///{tmp_path / 'd' / 'kernelopt.db'}"
    assert s.blobs_dir == tmp_path / "d" / "blobs"
    monkeypatch.setenv("KERNELOPT_DATABASE_URL", "postgres://u@h/db")
    monkeypatch.setenv("KERNELOPT_BROKER_URL", "redis://h:6379/0")
    monkeypatch.setenv("KERNELOPT_MAX_QUEUED_JOBS_PER_TEAM", "5")
    s = Settings()
    assert not s.embedded and s.effective_database_url == "postgresql+psycopg://u@h/db"
    assert s.max_queued_jobs_per_team == 5
    monkeypatch.setenv("KERNELOPT_BROKER_URL", "")
    assert Settings().embedded  # an empty variable means "not configured"


@pytest.mark.parametrize("var,value,message", [
    ("KERNELOPT_DATABASE_URL", "mysql://x/y", "postgresql:// or sqlite://"),
    ("KERNELOPT_BROKER_URL", "amqp://x", "redis://"),
    ("KERNELOPT_HEARTBEAT_TIMEOUT_S", "5", "must exceed"),
    ("KERNELOPT_MAX_JOB_ATTEMPTS", "0", "must be positive"),
    ("KERNELOPT_JOB_TIME_LIMIT_S", "soon", "job_time_limit_s"),
])
def test_bad_settings_fail_fast_with_a_clear_message(monkeypatch, tmp_path, var, value, message):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(var, value)
    get_settings.cache_clear()
    try:
        with pytest.raises(ConfigError, match="invalid KernelOPT configuration") as e:
            get_settings()
        assert message in str(e.value)
    finally:
        get_settings.cache_clear()


def test_admin_commands_on_the_embedded_default(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KERNELOPT_DATABASE_URL", raising=False)
    env = {"KERNELOPT_DATA_DIR": str(tmp_path / "data")}
    # A fresh install: `teams create` brings the embedded schema up first.
    assert run_admin(["teams", "create", "acme"], monkeypatch, env) == 0
    assert run_admin(["teams", "create", "acme"], monkeypatch, env) == 1
    assert "already exists" in capsys.readouterr().err
    assert run_admin(["keys", "create", "--team", "acme"], monkeypatch, env) == 0
    key = capsys.readouterr().out.strip()
    assert run_admin(["keys", "create", "--team", "nobody"], monkeypatch, env) == 1
    assert "kernelopt teams create nobody" in capsys.readouterr().err
    engine = make_engine(f"sqlite:///{tmp_path / 'data' / 'kernelopt.db'}")
    try:
        with make_sessionmaker(engine)() as s:
            assert auth.authenticate(s, key).name == "acme"
    finally:
        engine.dispose()


def test_admin_db_upgrade_on_an_empty_postgres(monkeypatch, tmp_path, capsys):
    name = f"kernelopt_admin_{uuid.uuid4().hex[:10]}"
    base = PG_ADMIN.rsplit("/", 1)[0]
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            monkeypatch.chdir(tmp_path)
            env = {"KERNELOPT_DATABASE_URL": f"{base}/{name}"}
            assert run_admin(["db", "upgrade"], monkeypatch, env) == 0
            assert "at revision head" in capsys.readouterr().out
            engine = make_engine(f"{base}/{name}")
            try:
                assert {"teams", "jobs", "job_events", "artifacts", "api_keys"} <= set(
                    inspect(engine).get_table_names())
            finally:
                engine.dispose()
            assert run_admin(["teams", "create", "pg-team"], monkeypatch, env) == 0
            assert run_admin(["keys", "create", "--team", "pg-team"], monkeypatch, env) == 0
            assert capsys.readouterr().out.strip().splitlines()[-1].startswith("ko_")
            # An unreachable database is one clear line, not a traceback.
            env = {"KERNELOPT_DATABASE_URL": f"{base}/does_not_exist_{uuid.uuid4().hex[:6]}"}
            assert run_admin(["db", "upgrade"], monkeypatch, env) == 1
            assert "cannot reach the database" in capsys.readouterr().err
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
