"""Admin commands: `kernelopt teams create`, `kernelopt keys create`, `kernelopt db upgrade`.

They use the configured database (KERNELOPT_DATABASE_URL, or the embedded SQLite
file under KERNELOPT_DATA_DIR). On the embedded default the schema is brought up
to date first, so `teams create` works on a fresh install; on PostgreSQL the
operator runs `kernelopt db upgrade` (the deployment's migration job does).
"""
from __future__ import annotations

import argparse
import functools
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

    keys = subparsers.add_parser("keys", help="manage API keys").add_subparsers(dest="keys_command", required=True)
    kc = keys.add_parser("create", help="create an API key for a team (printed once; only its hash is stored)")
    kc.add_argument("--team", required=True, help="team name")
    kc.set_defaults(func=_clear_errors(cmd_keys_create))

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
