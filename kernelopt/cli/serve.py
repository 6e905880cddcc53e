"""`kernelopt serve`: run the API (uvicorn).

With no database configured it is the embedded default: SQLite under KERNELOPT_DATA_DIR,
migrated at start, and — with no broker either — an in-process dispatcher (one slot per
visible GPU, or one CPU slot). If the database has no team yet, a `default` team is created
and its API key printed once, so one command is enough to start submitting.
"""
from __future__ import annotations

import argparse
import os
import socket
import sys

from kernelopt.cli.invocation import kernelopt_command

# The service's modules (the API, settings, database, auth, the sandbox gate) are imported by the command
# when it runs: cli.main imports this module for every command, `kernelopt optimize` included, which must
# work without the service extras. pipeline.torch_support too, for start-up time (see cli.main).


def register(subparsers) -> None:
    p = subparsers.add_parser("serve", help="run the API server (embedded SQLite + in-process workers by default)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="1-65535, or 0 for any free port (the one taken is announced)")
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


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port) as uvicorn binds one (port 0: a free port); OSError where it cannot be."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    # service extras: imported when run (note at the top), as are torch_support, sandbox_gate and api.app below
    from sqlalchemy.exc import OperationalError

    from kernelopt.service.settings import ConfigError, get_settings
    from kernelopt.storage.db import database_problem, redact, upgrade_database

    if not 0 <= args.port <= 65535:
        print(f"kernelopt serve: --port must be between 1 and 65535 (or 0: any free port), got {args.port}",
              file=sys.stderr)
        return 2
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
    if not sqlite:  # before anything starts: a server on an unreachable database would only log its failures
        problem = database_problem(url)
        if problem:
            print(f"kernelopt serve: cannot reach the database at {redact(url)} (KERNELOPT_DATABASE_URL): {problem}",
                  file=sys.stderr)
            return 2
    if settings.embedded:  # the in-process dispatcher runs the jobs here, as `kernelopt worker` would
        from kernelopt.pipeline.torch_support import refuse_unsupported_torch

        if refuse_unsupported_torch("kernelopt serve"):
            return 2
    if sqlite or args.migrate:
        try:
            upgrade_database(url)
        except OperationalError as exc:
            print(f"kernelopt serve: cannot migrate the database at {redact(url)}: "
                  f"{' '.join(str(exc.orig or exc).split())}", file=sys.stderr)
            return 2
    from kernelopt.service.sandbox_gate import require_sandbox, sandbox_status

    refusal = require_sandbox(settings, "kernelopt serve")
    if refusal:
        print(refusal, file=sys.stderr)
        return 2
    try:  # bound before it is announced (the banner names the port listened on) and before a key is made
        sock = listen(args.host, args.port)
    except (OSError, OverflowError) as exc:
        print(f"kernelopt serve: cannot listen on {args.host}:{args.port}: {getattr(exc, 'strerror', None) or exc}",
              file=sys.stderr)
        return 2
    port = sock.getsockname()[1]
    # The embedded default starts usable in one command; a PostgreSQL deployment gets its teams and
    # keys from an operator (kernelopt teams create / keys create), never from a server log.
    key = ensure_default_team(settings) if sqlite else None
    where = f"http://{args.host if ':' not in args.host else f'[{args.host}]'}:{port}"
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
        sock.close()  # uvicorn's supervisor binds the port again (at once) for its worker processes
        uvicorn.run("kernelopt.api.app:create_app", factory=True, host=args.host, port=port, workers=args.workers,
                    log_level=args.log_level, access_log=False)
        return 0
    from kernelopt.api.app import create_app

    server = uvicorn.Server(uvicorn.Config(create_app(settings), host=args.host, port=port,
                                           log_level=args.log_level, access_log=False))
    with sock:
        server.run(sockets=[sock])
    return 0 if server.started else 3  # 3: uvicorn's start-up failure
