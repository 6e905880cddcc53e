"""`kernelopt submit FILE`: upload a job to a KernelOPT server, optionally wait and download (for CI)."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from kernelopt.cli.invocation import kernelopt_command
from kernelopt.core.outcome import Cause, cause_code
from kernelopt.pipeline.report import KEPT_UNTIMED, kept_untimed

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_CRASHED = 3
EXIT_CANCELLED = 4
EXIT_TIMEOUT = 5
EXIT_REGRESSION = 6
EXIT_API = 7

EPILOG = """\
environment:
  KERNELOPT_URL       server URL (default http://127.0.0.1:8000)
  KERNELOPT_API_KEY   the team's API key (required)

exit codes (with --wait; without it, 0 means the job was accepted):
  0  succeeded: outcome optimized (speedup >= 1), matched, or fallback (the compiler's
     own code is kept; not a regression) unless the fallback was caused by a timeout or crash
  1  failed: the submission cannot run (e.g. it does not import); the message is printed
  2  usage error: bad arguments, missing file or missing KERNELOPT_API_KEY
  3  crashed: the job's worker died too many times, or the job ended in a crash
  4  cancelled
  5  timed out: the job hit its time limit, or --timeout passed while waiting
  6  regression: outcome optimized with a speedup below 1
  7  API error: server unreachable, key refused (401), upload refused (413/422/429), ...
"""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "submit", help="submit a job to a KernelOPT server (for CI: wait, download, exit non-zero on failure)",
        description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="model file (KernelBench convention) or Triton kernel file")
    p.add_argument("--weights", help="optional safetensors weights for the model")
    p.add_argument("--options", help='job options as a JSON object, e.g. \'{"dtype": "bf16", "time_budget_s": 600}\'')
    p.add_argument("--tag", help="a label to filter and aggregate jobs by (e.g. the CI pipeline)")
    p.add_argument("--wait", action="store_true", help="follow the job's events until it ends")
    p.add_argument("--download", metavar="DIR", help="download all artifacts into DIR when the job ends (implies --wait)")
    p.add_argument("--json", action="store_true", help="print only the final job as JSON on stdout (progress on stderr)")
    p.add_argument("--timeout", type=float, default=None, metavar="S", help="give up waiting after S seconds (exit 5)")
    p.add_argument("--idempotency-key", default=None, help="reuse a key to make a re-run of this command safe")
    p.add_argument("--url", default=None, help="server URL (default: $KERNELOPT_URL)")
    p.set_defaults(func=cmd_submit)


def exit_code_for(job: dict) -> int:
    status, outcome = job.get("status"), job.get("outcome")
    code = cause_code(job.get("cause") or "")  # the code before the first colon: "timeout: ..." -> "timeout"
    if status == "cancelled":
        return EXIT_CANCELLED
    if status == "crashed":
        return EXIT_TIMEOUT if code == Cause.TIMEOUT else EXIT_CRASHED
    if status == "failed" or outcome == "failed":
        return EXIT_TIMEOUT if code == Cause.TIMEOUT else EXIT_FAILED
    if status != "succeeded":
        return EXIT_API  # not terminal: should not happen after waiting
    if outcome == "optimized":
        speedup = job.get("speedup")
        return EXIT_REGRESSION if speedup is not None and speedup < 1.0 else EXIT_OK
    if outcome == "fallback":
        if code == Cause.TIMEOUT:
            return EXIT_TIMEOUT
        if code == Cause.CRASH:
            return EXIT_CRASHED
        return EXIT_OK
    if outcome == "matched":
        return EXIT_OK
    return EXIT_FAILED


def _stamp() -> str:
    return time.strftime("%H:%M:%S")


def event_line(data: dict) -> str:
    """One progress line: `[hh:mm:ss] stage: message`, or `[hh:mm:ss] message` for a job-level event."""
    stage, message = data.get("stage") or "", str(data.get("message") or "").strip()
    return f"[{_stamp()}] " + (f"{stage}: {message}" if stage and message else stage or message)


def final_line(job: dict) -> str:
    """How the job ended, in one line: status, outcome, speed (or why none was measured), cause."""
    text = f"job {job['id']} {job['status']}"
    if job.get("outcome"):
        text += f": outcome {job['outcome']}"
    if job.get("speedup") is not None:
        text += f", speedup {job['speedup']:.3f}x"
        if kept_untimed(job):  # a graph-break fallback: the 1.0 is keeping the compiler's code, nothing was timed
            text += f" ({KEPT_UNTIMED})"
    elif job.get("timing") == "not-measured" and job.get("outcome") != "failed":
        note = job.get("timing_note")
        text += f", speed not measured ({note})" if note else ", speed not measured"
    if job.get("cause") and job.get("outcome") != "failed":  # a failed job's error follows on its own line
        text += f" — {job['cause']}"
    return text


def cmd_submit(args: argparse.Namespace) -> int:
    import os

    # httpx (kernelopt.cli.client) is a service extra: cli.main imports this module for every command.
    from kernelopt.cli.client import ApiError, KernelOptClient

    out = sys.stderr if args.json else sys.stdout

    def say(msg: str) -> None:
        print(msg, file=out, flush=True)

    def err(msg: str) -> None:
        print(f"kernelopt submit: {msg}", file=sys.stderr, flush=True)

    file = Path(args.file)
    if not file.is_file():
        err(f"no such file: {file}")
        return EXIT_USAGE
    if args.weights and not Path(args.weights).is_file():
        err(f"no such weights file: {args.weights}")
        return EXIT_USAGE
    options = {}
    if args.options:
        try:
            options = json.loads(args.options)
        except json.JSONDecodeError as exc:
            err(f"--options is not valid JSON: {exc}")
            return EXIT_USAGE
        if not isinstance(options, dict):
            err("--options must be a JSON object")
            return EXIT_USAGE
    if not os.environ.get("KERNELOPT_API_KEY"):
        err("set KERNELOPT_API_KEY to your team's API key (an operator creates one: "
            f"{kernelopt_command()} keys create --team NAME)")
        return EXIT_USAGE
    wait = args.wait or bool(args.download)
    deadline = time.monotonic() + args.timeout if args.timeout else None

    with KernelOptClient(url=args.url) as client:
        try:
            job = client.submit(file, weights=args.weights, options=options, tag=args.tag,
                                idempotency_key=args.idempotency_key, log=say)
        except ApiError as exc:
            if exc.status_code == 422:  # e.g. "invalid options: `seeds`: must not be empty": one line, nothing stored
                err(" ".join(f"{exc.detail} (HTTP 422; nothing was submitted)".split()))
            else:
                err(f"submission refused: {exc}")
            return EXIT_API
        except Exception as exc:
            err(f"cannot reach {client.url}: {type(exc).__name__}: {exc}")
            return EXIT_API
        say(f"job {job['id']} {job['status']} ({client.url}{job['links']['self']})")
        if not wait:
            if args.json:
                print(json.dumps(job, indent=1))
            return EXIT_OK
        try:
            job = _follow(client, job, say, deadline)
        except TimeoutError:
            err(f"gave up waiting after {args.timeout:.0f} s; the job continues on the server: {job['id']}")
            if args.json:
                print(json.dumps(client.get_job(job["id"]), indent=1))
            return EXIT_TIMEOUT
        except ApiError as exc:
            err(str(exc))
            return EXIT_API
        except Exception as exc:
            err(f"lost the server while waiting: {type(exc).__name__}: {exc}")
            return EXIT_API
        code = exit_code_for(job)
        say(final_line(job))
        if job.get("error") and job["error"] != job.get("cause"):
            say(f"error: {job['error']}")
        if args.download:
            try:
                paths = client.download_all(job["id"], args.download)
                say(f"downloaded {len(paths)} artifacts to {args.download}")
            except Exception as exc:
                err(f"download failed: {type(exc).__name__}: {exc}")
                code = code or EXIT_API
        if args.json:
            print(json.dumps(job, indent=1))
        return code


def _follow(client, job: dict, say, deadline: float | None) -> dict:
    """Follow the SSE stream (reconnecting with Last-Event-ID); fall back to polling if it fails."""
    import threading

    from kernelopt.cli.client import TERMINAL, ApiError  # httpx: as in cmd_submit

    result: dict = {}
    failure: list = []

    def stream() -> None:
        try:
            for ev in client.events(job["id"]):
                if ev.event == "end":
                    result["job"] = ev.json()
                    return
                try:
                    data = ev.json() or {}
                except ValueError:
                    continue
                say(event_line(data))
        except Exception as exc:  # pragma: no cover - reported below, then polled
            failure.append(exc)

    t = threading.Thread(target=stream, daemon=True)
    t.start()
    while t.is_alive():
        t.join(timeout=1.0)
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError()
    if "job" in result:
        return client.get_job(job["id"])  # the authoritative, fresh record
    if failure and isinstance(failure[0], ApiError) and failure[0].status_code in (401, 403, 404):
        raise failure[0]
    say(f"[{_stamp()}] event stream unavailable ({failure[0] if failure else 'closed'}); polling")
    while True:
        current = client.get_job(job["id"])
        if current["status"] in TERMINAL:
            return current
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError()
        time.sleep(2.0)
