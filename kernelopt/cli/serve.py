"""`kernelopt serve`: run the API (uvicorn).

With no database configured it is the embedded default: SQLite under KERNELOPT_DATA_DIR,
migrated at start, and — with no broker either — an in-process dispatcher (one slot per
visible GPU, or one CPU slot). If the database has no team yet, a `default` team is created
and its API key printed once, so one command is enough to start submitting.
"""
from __future__ import annotations

import argparse
import os
import sys

from kernelopt.cli.invocation import kernelopt_command

# The service's modules (the API, settings, database, auth, the sandbox gate) are imported by the command
# when it runs: cli.main imports this module for every command, `kernelopt optimize` included, which must
# work without the service extras. pipeline.torch_support too, for start-up time (see cli.main).


def register(subparsers) -> None:
    p = subparsers.add_parser("serve", help="run the API server (embedded SQLite + in-process workers by default)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--workers", type=int, default=1,
                   help="uvicorn worker processes (more than 1 needs a broker: KERNELOPT_BROKER_URL)")
    p.add_argument("--migrate", action="store_true",
                   help="run `alembic upgrade head` on a configured PostgreSQL too (always done for SQLite)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    p.set_defaults(func=cmd_serve)


def ensure_default_team(settings) -> str | None:
    """Create team `default` and return its new key if the database has no team at all."""
    from sqlalchemy import func, select

    # service extras: imported when run (note at the top)
    from kernelopt.service.auth import create_api_key, create_team
    from kernelopt.storage.db import make_engine, make_sessionmaker
    from kernelopt.storage.models import Team

    engine = make_engine(settings.effective_database_url)
    try:
        with make_sessionmaker(engine)() as session:
            if session.scalar(select(func.count()).select_from(Team)):
                return None
            team = create_team(session, "default")
            return create_api_key(session, team.id)
    finally:
        engine.dispose()


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    # service extras: imported when run (note at the top), as are torch_support, sandbox_gate and api.app below
    from kernelopt.service.settings import ConfigError, get_settings
    from kernelopt.storage.db import upgrade_database

    try:
        settings = get_settings()
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    url = settings.effective_database_url
    sqlite = url.startswith("sqlite")
    if args.workers > 1 and settings.broker_url is None:
        print("kernelopt serve: --workers > 1 needs a broker (KERNELOPT_BROKER_URL): the in-process dispatcher "
              "runs inside the one API process", file=sys.stderr)
        return 2
    if settings.embedded:  # the in-process dispatcher runs the jobs here, as `kernelopt worker` would
        from kernelopt.pipeline.torch_support import refuse_unsupported_torch

        if refuse_unsupported_torch("kernelopt serve"):
            return 2
    if sqlite or args.migrate:
        upgrade_database(url)
    from kernelopt.service.sandbox_gate import require_sandbox, sandbox_status

    refusal = require_sandbox(settings, "kernelopt serve")
    if refusal:
        print(refusal, file=sys.stderr)
        return 2
    # The embedded default starts usable in one command; a PostgreSQL deployment gets its teams and
    # keys from an operator (kernelopt teams create / keys create), never from a server log.
    key = ensure_default_team(settings) if sqlite else None
    where = f"http://{args.host}:{args.port}"
    print(f"KernelOPT API on {where}  (docs {where}/docs)")
    print(f"  database: {'SQLite ' + url.split('///', 1)[-1] if sqlite else 'PostgreSQL'}")
    print(f"  queue:    {'Redis/Celery' if settings.broker_url else 'in-process (embedded dispatcher)'}")
    print(f"  data:     {os.path.abspath(settings.data_dir)}")
    print(f"  sandbox:  {sandbox_status(settings).check()}")
    if key:
        print("\nCreated team 'default'. Its API key, shown only once:\n")
        print(f"    {key}\n")
        print(f"  export KERNELOPT_URL={where} KERNELOPT_API_KEY={key}")
        print(f"  {kernelopt_command()} submit model.py --wait --download out/\n")
    sys.stdout.flush()
    if args.workers > 1:
        if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            import tempfile

            os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="kernelopt-metrics-")
        uvicorn.run("kernelopt.api.app:create_app", factory=True, host=args.host, port=args.port, workers=args.workers,
                    log_level=args.log_level, access_log=False)
    else:
        from kernelopt.api.app import create_app

        uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level=args.log_level,
                    access_log=False)
    return 0
