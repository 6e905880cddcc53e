"""Admin commands: `kernelopt teams create|list`, `kernelopt keys create|list|revoke`, `kernelopt db upgrade`.

They use the configured database (KERNELOPT_DATABASE_URL, or the embedded SQLite
file under KERNELOPT_DATA_DIR). On the embedded default the schema is brought up
to date first, so `teams create` works on a fresh install; on PostgreSQL the
operator runs `kernelopt db upgrade` (the deployment's migration job does).
"""
from __future__ import annotations

import argparse
import functools
import json
import sys

from kernelopt.cli.invocation import kernelopt_command

# The service's modules (settings, database, auth) are imported by each command: cli.main imports this
# module for every command, `kernelopt optimize` included, which must work without the service extras
# (pydantic-settings, SQLAlchemy, Alembic).


def register(subparsers) -> None:
    teams = subparsers.add_parser("teams", help="manage teams").add_subparsers(dest="teams_command", required=True)
    tc = teams.add_parser("create", help="create a team")
    tc.add_argument("name")
    tc.set_defaults(func=_clear_errors(cmd_teams_create))
    tl = teams.add_parser("list", help="list the teams and how many API keys each has")
    tl.add_argument("--json", action="store_true", help="print a JSON list")
    tl.set_defaults(func=_clear_errors(cmd_teams_list))

    keys = subparsers.add_parser("keys", help="manage API keys").add_subparsers(dest="keys_command", required=True)
    kc = keys.add_parser("create", help="create an API key for a team (printed once; only its hash is stored)")
    kc.add_argument("--team", required=True, help="team name")
    kc.set_defaults(func=_clear_errors(cmd_keys_create))
    kl = keys.add_parser("list", help="list the API keys (id, team, the key's first characters, created, revoked)")
    kl.add_argument("--team", help="only this team's keys")
    kl.add_argument("--json", action="store_true", help="print a JSON list")
    kl.set_defaults(func=_clear_errors(cmd_keys_list))
    kr = keys.add_parser("revoke", help="revoke an API key: requests with it are refused (401) from then on")
    kr.add_argument("key", metavar="ID_OR_KEY", help="the key's id (as `keys list` shows it) or the whole key")
    kr.set_defaults(func=_clear_errors(cmd_keys_revoke))

    db = subparsers.add_parser("db", help="database schema").add_subparsers(dest="db_command", required=True)
    du = db.add_parser("upgrade", help="apply the Alembic migrations up to head")
    du.add_argument("--revision", default="head")
    du.set_defaults(func=_clear_errors(cmd_db_upgrade))


def _clear_errors(cmd):
    """Configuration and database errors end the command with one clear line, not a traceback."""
    @functools.wraps(cmd)
    def run(args: argparse.Namespace) -> int:
        from sqlalchemy.exc import OperationalError

        from kernelopt.service.settings import ConfigError  # service extras: imported when run (note at the top)

        try:
            return cmd(args)
        except ConfigError as e:
            return _fail(str(e))
        except OperationalError as e:
            return _fail(f"cannot reach the database: {e.orig}")
    return run


def _session(upgrade_embedded: bool = True):
    # service extras: imported when run (note at the top)
    from kernelopt.service.settings import get_settings
    from kernelopt.storage.db import make_engine, make_sessionmaker, upgrade_database

    settings = get_settings()
    url = settings.effective_database_url
    if upgrade_embedded and settings.database_url is None:
        upgrade_database(url)
    return make_sessionmaker(make_engine(url))()


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 1


def cmd_teams_create(args: argparse.Namespace) -> int:
    # service extras: imported when run (note at the top)
    from kernelopt.service.auth import TeamExists, create_team

    with _session() as session:
        try:
            team = create_team(session, args.name)
        except (TeamExists, ValueError) as e:
            return _fail(str(e))
        print(f"created team {team.name!r} (id {team.id})")
    return 0


def cmd_keys_create(args: argparse.Namespace) -> int:
    # service extras: imported when run (note at the top)
    from kernelopt.service.auth import create_api_key, get_team_by_name

    with _session() as session:
        team = get_team_by_name(session, args.team)
        if team is None:
            return _fail(f"no team named {args.team!r} (create it with: {kernelopt_command()} teams create "
                         f"{args.team})")
        key = create_api_key(session, team.id)
    # The key goes alone on stdout so scripts can capture it; the note goes to stderr.
    print(key)
    print(f"API key for team {args.team!r}; it is shown only this once (only its hash is stored).", file=sys.stderr)
    return 0


def _when(value) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value is not None else ""


def cmd_teams_list(args: argparse.Namespace) -> int:
    from kernelopt.service.auth import list_teams  # service extras: imported when run (note at the top)

    with _session() as session:
        teams = list_teams(session)
    if args.json:
        print(json.dumps([{"id": t.id, "name": t.name, "created_at": t.created_at.isoformat(), "active_keys": active,
                           "keys": total} for t, active, total in teams], indent=1))
        return 0
    if not teams:
        print(f"no teams (create one with: {kernelopt_command()} teams create NAME)", file=sys.stderr)
        return 0
    print(f"{'ID':>4}  {'TEAM':24}  {'KEYS':>12}  CREATED")
    for team, active, total in teams:
        print(f"{team.id:>4}  {team.name:24}  {f'{active} active/{total}':>12}  {_when(team.created_at)}")
    return 0


def cmd_keys_list(args: argparse.Namespace) -> int:
    # service extras: imported when run (note at the top)
    from kernelopt.service.auth import PREFIX_LEN, get_team_by_name, list_api_keys

    with _session() as session:
        team_id = None
        if args.team is not None:
            team = get_team_by_name(session, args.team)
            if team is None:
                return _fail(f"no team named {args.team!r} ({kernelopt_command()} teams list shows them)")
            team_id = team.id
        keys = list_api_keys(session, team_id)
    if args.json:
        print(json.dumps([{"id": k.id, "team": name, "prefix": k.prefix, "created_at": k.created_at.isoformat(),
                           "revoked_at": k.revoked_at.isoformat() if k.revoked_at else None} for k, name in keys],
                         indent=1))
        return 0
    if not keys:
        print("no API keys" + (f" for team {args.team!r}" if args.team else ""), file=sys.stderr)
        return 0
    # Only a key's first characters are stored (to narrow a lookup); the key itself never is.
    print(f"{'ID':>4}  {'TEAM':24}  {'KEY':{PREFIX_LEN + 1}}  {'CREATED':23}  REVOKED")
    for key, name in keys:
        print(f"{key.id:>4}  {name:24}  {key.prefix + '…':{PREFIX_LEN + 1}}  {_when(key.created_at):23}  "
              f"{_when(key.revoked_at) or '-'}")
    return 0


def cmd_keys_revoke(args: argparse.Namespace) -> int:
    # service extras: imported when run (note at the top)
    from kernelopt.service.auth import KEY_PREFIX, find_api_key, revoke_api_key_row
    from kernelopt.service.settings import get_settings
    from kernelopt.storage.models import Team

    with _session() as session:
        row = find_api_key(session, args.key)
        if row is None:
            ref = args.key.strip()
            listing = f"{kernelopt_command()} keys list shows the keys and their ids"
            if ref.isdigit():
                return _fail(f"no API key with id {ref} ({listing})")
            if ref.startswith(KEY_PREFIX):
                return _fail(f"no API key matches the key given ({listing})")
            return _fail(f"{ref!r} is neither a key's id nor a whole key ({KEY_PREFIX}…; {listing})")
        team = session.get(Team, row.team_id)
        name = team.name if team is not None else f"#{row.team_id}"
        if not revoke_api_key_row(session, row):
            return _fail(f"key {row.id} ({row.prefix}…, team {name!r}) was already revoked at {_when(row.revoked_at)}")
    print(f"revoked key {row.id} ({row.prefix}…, team {name!r})")
    ttl = get_settings().auth_cache_ttl_s
    if ttl > 0:
        print(f"An API process that accepted it in the last {ttl:g} s may accept it until then "
              "(KERNELOPT_AUTH_CACHE_TTL_S); then every request with it is refused.", file=sys.stderr)
    return 0


def cmd_db_upgrade(args: argparse.Namespace) -> int:
    # service extras: imported when run (note at the top)
    from kernelopt.service.settings import get_settings
    from kernelopt.storage.db import upgrade_database

    url = get_settings().effective_database_url
    upgrade_database(url, args.revision)
    print(f"database at {_redact(url)} is at revision {args.revision}")
    return 0


def _redact(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
