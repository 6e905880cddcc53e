"""`kernelopt teams list`, `keys list` and `keys revoke` (issue 37, item 6) on the test databases (PostgreSQL
and SQLite): a revoked key is refused by the real API app from then on; the other keys keep working."""
from __future__ import annotations

import json

import pytest

from tests.service.conftest import run_admin


def admin(argv: list[str], monkeypatch, db_url: str) -> int:
    return run_admin(argv, monkeypatch, {"KERNELOPT_DATABASE_URL": db_url})


def test_keys_list_and_revoke_through_the_api(api, db_url, monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)  # no stray .env
    team_name = api.team.name
    assert admin(["keys", "create", "--team", team_name], monkeypatch, db_url) == 0
    second = capsys.readouterr().out.strip()
    for key in (api.key, second):
        assert api.client.get("/v1/jobs", headers=api.headers(key)).status_code == 200

    assert admin(["teams", "list", "--json"], monkeypatch, db_url) == 0
    teams = {t["name"]: t for t in json.loads(capsys.readouterr().out)}
    assert teams[team_name]["active_keys"] == 2 and teams[team_name]["keys"] == 2
    assert admin(["teams", "list"], monkeypatch, db_url) == 0
    assert any(line.split()[1:3] == [team_name, "2"] for line in capsys.readouterr().out.splitlines())

    assert admin(["keys", "list", "--team", team_name, "--json"], monkeypatch, db_url) == 0
    keys = json.loads(capsys.readouterr().out)
    assert [k["prefix"] for k in keys] == [api.key[:8], second[:8]]
    assert all(k["team"] == team_name and k["revoked_at"] is None for k in keys)
    assert admin(["keys", "list", "--team", team_name], monkeypatch, db_url) == 0
    table = capsys.readouterr().out
    assert api.key[:8] + "…" in table and api.key not in table  # only the stored prefix: never a key

    # revoke the first by its id: the API refuses it at once (the test app caches no key), the second works
    assert admin(["keys", "revoke", str(keys[0]["id"])], monkeypatch, db_url) == 0
    out = capsys.readouterr()
    assert out.out == f"revoked key {keys[0]['id']} ({api.key[:8]}…, team {team_name!r})\n"
    r = api.client.get("/v1/jobs", headers=api.headers(api.key))
    assert r.status_code == 401 and "revoked" in r.json()["detail"], r.text
    assert api.client.get("/v1/jobs", headers=api.headers(second)).status_code == 200
    # revoking it again, or a key that does not exist, is one line and exit 1
    assert admin(["keys", "revoke", str(keys[0]["id"])], monkeypatch, db_url) == 1
    assert "was already revoked" in capsys.readouterr().err
    assert admin(["keys", "revoke", "999999999"], monkeypatch, db_url) == 1
    assert "no API key with id 999999999" in capsys.readouterr().err
    # the second by the whole key
    assert admin(["keys", "revoke", second], monkeypatch, db_url) == 0
    capsys.readouterr()
    assert api.client.get("/v1/jobs", headers=api.headers(second)).status_code == 401

    assert admin(["keys", "list", "--team", team_name, "--json"], monkeypatch, db_url) == 0
    assert all(k["revoked_at"] for k in json.loads(capsys.readouterr().out))
    assert admin(["teams", "list", "--json"], monkeypatch, db_url) == 0
    team = next(t for t in json.loads(capsys.readouterr().out) if t["name"] == team_name)
    assert (team["active_keys"], team["keys"]) == (0, 2)


@pytest.mark.parametrize("argv, message", [
    (["keys", "list", "--team", "no-such-team"], "error: no team named 'no-such-team'"),
    (["keys", "revoke", "abc"], "error: 'abc' is neither a key's id nor a whole key"),
    (["keys", "revoke", "ko_" + "x" * 43], "error: no API key matches the key given"),
])
def test_admin_key_errors_are_one_line(db_url, monkeypatch, tmp_path, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    assert admin(argv, monkeypatch, db_url) == 1
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1, err
