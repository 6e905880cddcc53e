"""`kernelopt worker`: one Celery worker process per GPU, pinned, supervised.

    kernelopt worker                # one worker per visible GPU (or one CPU worker if none)
    kernelopt worker --gpus 2       # the first two GPUs
    kernelopt worker --gpus 0,3     # GPUs 0 and 3

Each worker is `celery -A kernelopt.worker.celery_app worker --concurrency 1` with
CUDA_VISIBLE_DEVICES set to its GPU and the node name gpu<i>@<host>. GPUs are
counted in a child process, so this process never initialises CUDA. A worker
that exits unexpectedly is restarted (with back-off); SIGTERM/SIGINT is passed
on to the workers (Celery's warm shutdown: the running job finishes first), a
second one asks for a cold shutdown (the running job is abandoned and re-queued
by the reaper of another worker).
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from kernelopt.cli.invocation import kernelopt_command

# The service's modules (Celery, settings, the dispatcher, the sandbox gate) are imported by the command
# when it runs: cli.main imports this module for every command, `kernelopt optimize` included, which must
# work without the service extras. pipeline.torch_support too, for start-up time (see cli.main).

# The directory holding the `kernelopt` package: on the workers' PYTHONPATH and their cwd, so that
# they import this very copy (a checkout run without installing, as on the GPU box).
PACKAGE_PARENT = Path(__file__).resolve().parents[2]


@dataclass
class WorkerSpec:
    name: str  # Celery node name, e.g. gpu0@%h
    argv: list[str]
    env: dict[str, str]
    proc: subprocess.Popen | None = None
    restarts: int = 0
    next_start: float = 0.0
    started_at: float = field(default=0.0)


def worker_specs(slots: list[dict[str, str]], pool: str = "solo", loglevel: str = "info",
                 prefix: str = "") -> list[WorkerSpec]:
    """The command line and environment of one Celery worker per slot."""
    from kernelopt.worker.broker import QUEUE  # Celery, a service extra: imported when run (note at the top)

    specs = []
    for i, slot_env in enumerate(slots):
        name = f"{prefix}gpu{i}@%h" if slot_env.get("CUDA_VISIBLE_DEVICES") else f"{prefix}cpu@%h"
        env = dict(os.environ)
        env.update(slot_env)
        env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_PARENT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        argv = [sys.executable, "-m", "celery", "-A", "kernelopt.worker.celery_app", "worker",
                "--pool", pool, "--concurrency", "1", "--prefetch-multiplier", "1",
                "--hostname", name, "--queues", QUEUE, "--loglevel", loglevel,
                "--without-gossip", "--without-mingle"]
        specs.append(WorkerSpec(name, argv, env))
    return specs


def _start(spec: WorkerSpec) -> None:
    # A session of its own: a terminal's Ctrl-C reaches the supervisor only, which forwards it once.
    spec.proc = subprocess.Popen(spec.argv, env=spec.env, cwd=str(PACKAGE_PARENT), start_new_session=True)
    spec.started_at = time.monotonic()
    pin = spec.env.get("CUDA_VISIBLE_DEVICES")
    print(f"kernelopt worker: started {spec.name} (pid {spec.proc.pid}"
          f"{', CUDA_VISIBLE_DEVICES=' + pin if pin else ', CPU'})", flush=True)


def supervise(specs: list[WorkerSpec], poll_s: float = 1.0) -> int:
    stopping = {"signals": 0}

    def on_signal(signum, _frame):
        stopping["signals"] += 1
        forward = signal.SIGTERM if stopping["signals"] == 1 else signal.SIGQUIT
        how = "warm shutdown (running jobs finish)" if forward == signal.SIGTERM else "cold shutdown"
        print(f"kernelopt worker: {signal.Signals(signum).name}: {how}", flush=True)
        for spec in specs:
            if spec.proc is not None and spec.proc.poll() is None:
                try:
                    spec.proc.send_signal(forward)
                except ProcessLookupError:
                    pass

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        for spec in specs:
            _start(spec)
        while True:
            for spec in specs:
                if spec.proc is None:
                    if not stopping["signals"] and time.monotonic() >= spec.next_start:
                        _start(spec)
                    continue
                code = spec.proc.poll()
                if code is None:
                    continue
                if stopping["signals"]:
                    continue
                # Unexpected exit: restart, backing off if it keeps dying young.
                spec.restarts = spec.restarts + 1 if time.monotonic() - spec.started_at < 60 else 1
                delay = min(60.0, 2.0 ** (spec.restarts - 1))
                print(f"kernelopt worker: {spec.name} exited with code {code}; restarting in {delay:.0f} s",
                      flush=True)
                spec.proc = None
                spec.next_start = time.monotonic() + delay
            if stopping["signals"] and all(s.proc is None or s.proc.poll() is not None for s in specs):
                return 0
            time.sleep(poll_s)
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def cmd_worker(args: argparse.Namespace) -> int:
    # service extras and torch_support: imported when run (note at the top), as is sandbox_gate below
    from kernelopt.pipeline.torch_support import refuse_unsupported_torch
    from kernelopt.service.settings import ConfigError, get_settings
    from kernelopt.worker.dispatch import detect_slots

    # Every job of this worker would fail inside capture on an untested torch: refuse at start instead.
    if refuse_unsupported_torch("kernelopt worker"):
        return 2
    try:
        settings = get_settings()
    except ConfigError as exc:
        print(f"kernelopt worker: {exc}", file=sys.stderr)
        return 2
    if settings.embedded:
        print("kernelopt worker: needs KERNELOPT_DATABASE_URL (PostgreSQL) and KERNELOPT_BROKER_URL (Redis).\n"
              f"On a single machine without them, `{kernelopt_command()} serve` runs jobs in-process instead.",
              file=sys.stderr)
        return 2
    from kernelopt.service.sandbox_gate import require_sandbox

    refusal = require_sandbox(settings, "kernelopt worker")
    if refusal:
        print(refusal, file=sys.stderr)
        return 2
    try:
        slots = detect_slots(args.gpus)
    except ValueError as exc:
        print(f"kernelopt worker: {exc}", file=sys.stderr)
        return 2
    specs = worker_specs(slots, pool=args.pool, loglevel=args.loglevel, prefix=args.name_prefix)
    return supervise(specs)


def register(subparsers) -> None:
    w = subparsers.add_parser("worker", help="run Celery workers: one per GPU (pinned), or one CPU worker",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    w.add_argument("--gpus", default="all", help="'all' (default: one worker per visible GPU), a count N, "
                   "or a list of GPU indices like 0,1")
    w.add_argument("--pool", default="solo", choices=["solo", "prefork"],
                   help="Celery pool: solo runs the task in the worker process (default), prefork in one "
                   "pool child; either way the engine runs in child processes")
    w.add_argument("--loglevel", default="info")
    w.add_argument("--name-prefix", default="", help="prefix of the Celery node names (gpu<i>@<host>)")
    w.set_defaults(func=cmd_worker)
