"""`kernelopt`: optimize one problem, bench a directory, re-check a result; run and use the service."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from kernelopt import EXAMPLES

# The service's front ends; their modules import web/database packages only when run.
from kernelopt.cli import admin, serve, submit, worker
from kernelopt.core.precision import PrecisionPolicy
from kernelopt.core.tolerance import DTYPES, Dtype
from kernelopt.pipeline.errors import InputError, require_file, require_output_dir
from kernelopt.pipeline.options import JobOptions, JobResult
from kernelopt.pipeline.report import KEPT_UNTIMED, kept_untimed
from kernelopt.search.registry import default_generators, describe

# The engine's commands import their pipeline modules when run: pipeline.job, .check, .bench, .device and
# .torch_support at the top would double the start of every `kernelopt` command (measured: `import
# kernelopt.cli.main` 73 -> 136 ms of CPU), `kernelopt submit` and the admin commands included.

POLICIES = [p.value for p in PrecisionPolicy]
# The embedded defaults (package data): the suite's level2/01 model, and a Triton row softmax.
DEFAULT_MODEL_PROBLEM = EXAMPLES / "linear_bias_gelu.py"
DEFAULT_KERNEL_PROBLEM = EXAMPLES / "row_softmax_kernel.py"
# What every `optimize` run leaves in its work directory (pipeline.context opens events.jsonl before anything
# else; report.json at the end): a --workdir holding other files is refused, never written into.
RUN_MARKERS = ("events.jsonl", "report.json")


DTYPE_HELP = ("cast the model and its inputs to this dtype (floating-point tensors only); Gates 2-3 then "
              "compare with that dtype's tolerance (core.tolerance)")


def _print_event(event) -> None:
    if event.kind == "stage_started":
        print(f"[{time.strftime('%H:%M:%S')}] {event.stage}: {event.message}", flush=True)
    elif event.kind == "stage_finished":
        print(f"[{time.strftime('%H:%M:%S')}]   {event.message}", flush=True)
    else:
        print(f"[{time.strftime('%H:%M:%S')}]   {event.message}", flush=True)


# The design's symbols for the search options (docs/architecture.md, Search) (`--search T=3,K=2,chains=2`); full option names work too.
SEARCH_SYMBOLS = {"T": "iterations", "N": "plans_per_iteration", "K": "executor_retries", "B": "beam_width",
                  "Q": "memory_size", "s+": "memory_success", "s-": "memory_slowdown"}


# The command line's flag for each job option (api.options.JobOptionsIn's field names), for its one-line errors.
OPTION_FLAGS = {"time_budget_s": "--budget", "dtype": "--dtype", "precision": "--precision",
                "generators": "--generators"}


def option_flag(field: str) -> str:
    """`time_budget_s` -> `--budget`, `iterations` -> `--search T (iterations)`."""
    name = field.split("[", 1)[0]
    if name in OPTION_FLAGS:
        return OPTION_FLAGS[name]
    symbol = next((s for s, n in SEARCH_SYMBOLS.items() if n == name), None)
    return f"--search {symbol} ({name})" if symbol else f"--search {name}"


def job_options(raw: dict) -> JobOptions:
    """The options `kernelopt optimize` was given, checked as the API checks a job's (api.options:
    one pydantic model, so the command line takes no value the service refuses), or InputError."""
    try:
        from kernelopt.api.options import InvalidOptions, validate_options
    except ImportError:  # no service extras (pydantic): the engine's own checks (pipeline.options)
        try:
            return JobOptions(**raw)
        except (TypeError, ValueError) as exc:
            raise InputError(str(exc)) from None
    try:
        return JobOptions.from_dict(validate_options(raw))
    except InvalidOptions as exc:
        raise InputError("; ".join(_option_error(e["field"], e["message"]) for e in exc.errors)) from None


def _option_error(field: str, message: str) -> str:
    if not field:
        return message
    return f"{option_flag(field)} {message}" if message.startswith("must") else f"{option_flag(field)}: {message}"


def search_options(text: str | None) -> dict:
    """`T=3,K=2,chains=2` -> {"iterations": 3, "executor_retries": 2, "chains": 2}; ValueError names a bad one."""
    out: dict = {}
    fields = JobOptions.__dataclass_fields__
    for item in filter(None, (p.strip() for p in (text or "").split(","))):
        key, sep, value = item.partition("=")
        name = SEARCH_SYMBOLS.get(key.strip(), key.strip())
        if not sep or name not in fields or fields[name].type not in ("int", "float"):
            raise ValueError(f"--search: {item!r} is not one of {', '.join(SEARCH_SYMBOLS)} or a numeric option")
        try:
            out[name] = int(value) if fields[name].type == "int" else float(value)
        except ValueError:
            raise ValueError(f"--search: {item!r}: {value!r} is not a number") from None
    return out


def console_speed(result: JobResult) -> str:
    """The console's line on speed: what was measured, or why nothing was."""
    if not result.measured:
        return f"speed: not measured ({result.timing_note})" if result.timing_note else "speed: not measured"
    times = ""
    if result.baseline_ms is not None:
        times = f" (baseline {result.baseline_ms:.4f} ms, noise {result.noise_pct or 0:.2f}%)"
    elif kept_untimed(result.to_dict()):
        times = f" ({KEPT_UNTIMED})"
    return f"speedup vs compiler baseline: {result.speedup:.3f}x{times}"


def cmd_optimize(args: argparse.Namespace) -> int:
    # imported when run, for the start-up time of the other commands (see the note at the top)
    from kernelopt.pipeline.torch_support import refuse_unsupported_torch

    if refuse_unsupported_torch("kernelopt optimize"):  # before anything is created: capture would fail later
        return 2
    from kernelopt.isolation.compile_cache import lent
    from kernelopt.pipeline.device import NO_GPU_MESSAGE, probe_device
    from kernelopt.pipeline.job import run_job

    try:
        extra: dict[str, Any] = {"generators": [g.strip() for g in args.generators.split(",") if g.strip()]} \
            if args.generators is not None else {}
        extra.update(search_options(args.search))
    except ValueError as exc:
        raise InputError(str(exc)) from None
    options = job_options(dict(dtype=args.dtype, precision=args.precision, time_budget_s=args.budget, **extra))
    problem = args.problem
    if problem is not None:  # checked before anything is printed or created
        require_file(problem, "problem file")
    if args.weights is not None:
        require_file(args.weights, "weights file")
    if problem is None:
        info = probe_device()
        if info.cuda:
            problem = str(DEFAULT_MODEL_PROBLEM)
        else:
            print(f"No problem given and no GPU here. {NO_GPU_MESSAGE}\n"
                  f"Running the embedded single-kernel default instead: {DEFAULT_KERNEL_PROBLEM.name}\n",
                  file=sys.stderr if args.json else sys.stdout, flush=True)
            problem = str(DEFAULT_KERNEL_PROBLEM)
    workdir = Path(args.workdir or Path("runs") / Path(problem).stem)
    if workdir.exists() and not workdir.is_dir():
        raise InputError(f"work directory {workdir} is a file")
    # the last check: it creates the directory (never writing into one that holds files of its own)
    require_output_dir(workdir, "work directory", RUN_MARKERS)
    if not args.json:
        print(f"kernelopt optimize {problem} -> {workdir}", flush=True)
    slot = Path(args.compile_cache).resolve() if args.compile_cache else None
    with lent(slot, workdir):
        result = run_job(problem, workdir, options, on_event=None if args.json else _print_event,
                         weights_path=args.weights, keep_compile_caches=slot is not None)
    if args.json:
        print(json.dumps(result.to_dict(), indent=1))
    else:
        print(f"\noutcome: {result.outcome} — {result.cause}")
        print(console_speed(result))
        print(f"report: {workdir / 'report.md'}")
    return 1 if result.outcome == "failed" else 0


def cmd_check(args: argparse.Namespace) -> int:
    from kernelopt.pipeline.torch_support import refuse_unsupported_torch  # when run: start-up time (see the top)

    if refuse_unsupported_torch("kernelopt check", torch_version_too=False):  # its children run torch
        return 2
    from kernelopt.pipeline.check import CheckRequest, run_check

    result = run_check(CheckRequest(args.optimized, args.problem, precision=args.precision, dtype=args.dtype,
                                    weights=args.weights))
    print(json.dumps(result, indent=1) if args.json else result["summary"])
    return 0 if result["passed"] else 1


def cmd_bench(args: argparse.Namespace) -> int:
    # imported when run, for the start-up time of the other commands (see the note at the top)
    from kernelopt.pipeline.torch_support import refuse_unsupported_torch

    if refuse_unsupported_torch("kernelopt bench"):
        return 2
    from kernelopt.pipeline.bench import BenchOptions, run_bench

    summary = run_bench(BenchOptions(
        problems_dir=args.directory, out_dir=args.out, time_limit_s=args.time_limit,
        precision=args.precision, dtype=args.dtype, gpus=args.gpus, only=args.only, resume=args.resume,
        stop_after_s=args.stop_after, expect_from=args.expect, compile_cache=args.compile_cache,
        generators=[g.strip() for g in args.generators.split(",") if g.strip()] if args.generators else None))
    print(summary["text"])
    # a result `kernelopt check` could not run on is no more a pass than one it failed
    return 0 if summary["regressions"] == 0 and summary["wrong_answers"] == 0 and not summary["not_rechecked"] else 1


def cmd_generators(args: argparse.Namespace) -> int:
    specs = describe()
    if args.json:
        print(json.dumps(specs, indent=1))
    else:
        for s in specs:
            kinds = f" ({'/'.join(s['kernel_kinds'])})" if s["kernel_kinds"] else ""
            use = "default" if s["default"] else "opt-in"
            print(f"{s['name']:14s} [{use}; {'/'.join(s['targets'])}{kinds}; {'/'.join(s['policies'])}; "
                  f"{'/'.join(s['dtypes'])}] {s['touches']}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kernelopt", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    o = sub.add_parser("optimize", help="run one job locally (no service)")
    o.add_argument("problem", nargs="?", help="model file (KernelBench convention) or Triton kernel file; "
                   "default: an embedded problem")
    o.add_argument("--workdir", help="where artifacts go (default runs/<problem>): a new or empty directory, or one "
                   "of an earlier run; never one holding other files")
    o.add_argument("--dtype", default=Dtype.FP32.value, choices=DTYPES, help=DTYPE_HELP)
    o.add_argument("--precision", default=PrecisionPolicy.STRICT.value, choices=POLICIES)
    o.add_argument("--budget", type=float, default=900.0, help="time budget in seconds, compile included")
    o.add_argument("--weights", help="safetensors file loaded into the model (its state dict)")
    o.add_argument("--generators", help="comma-separated candidate generators (`kernelopt generators` lists them; "
                   f"default {','.join(default_generators())}); the agents (llm, llm_codegen, llm_fusion) need "
                   "KERNELOPT_LLM_MODEL and an endpoint")
    o.add_argument("--search", help="search controls, e.g. T=3,N=4,K=2,B=4,Q=8,chains=2,meltdown_failures=4 "
                   "(docs/agents.md)")
    o.add_argument("--compile-cache", default=None, metavar="DIR",
                   help="keep the compiler caches (autotune timings, compiled kernels) in DIR for the next run "
                   "to compile from (a compile they break runs again without them)")
    o.add_argument("--json", action="store_true", help="print the result as JSON only")
    o.set_defaults(func=cmd_optimize)

    c = sub.add_parser("check", help="independently re-check an optimized_module.py on 5 fresh seeds")
    c.add_argument("optimized")
    c.add_argument("problem")
    c.add_argument("--precision", default=PrecisionPolicy.STRICT.value, choices=POLICIES)
    c.add_argument("--dtype", default=Dtype.FP32.value, choices=DTYPES,
                   help="the dtype the job ran in (the model, ModelNew and the inputs are cast to it)")
    c.add_argument("--weights", help="the safetensors file the job was given, if any")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_check)

    b = sub.add_parser("bench", help="optimize every problem of a directory and write a report")
    b.add_argument("directory")
    b.add_argument("--out", default="runs/bench", help="where the report and each problem's artifacts go (default "
                   "runs/bench): a new or empty directory, or one of an earlier bench; never one holding other files")
    b.add_argument("--time-limit", type=float, default=None,
                   help="per problem, seconds (default by level folder: level1 and level2 300, level3 900, "
                        "any other 300)")
    b.add_argument("--precision", default=PrecisionPolicy.STRICT.value, choices=POLICIES)
    b.add_argument("--dtype", default=Dtype.FP32.value, choices=DTYPES, help=DTYPE_HELP)
    b.add_argument("--gpus", type=int, default=None, help="GPUs to use (default: all visible)")
    b.add_argument("--only", default=None, help="comma-separated substrings: only problems whose path contains one")
    b.add_argument("--resume", action="store_true",
                   help="keep the finished problems of an earlier run into --out and run only the rest")
    b.add_argument("--stop-after", type=float, default=None, metavar="SECONDS",
                   help="start no problem not expected to finish within SECONDS of the start (they are listed "
                   "for --resume)")
    b.add_argument("--expect", default=None, metavar="BENCH_JSON",
                   help="an earlier run's bench.json: its per-problem times are what --stop-after expects, "
                   "plus 60 s where that run had another --dtype or --precision (default: the time limit)")
    b.add_argument("--generators", default=None,
                   help="comma-separated generators for every job (`kernelopt generators` lists them; default: theirs)")
    b.add_argument("--compile-cache", default=None, metavar="DIR",
                   help="keep the compiler caches (autotune timings, compiled kernels) in DIR from job to job, for a "
                   "re-run to compile from (each row says how many files its job found there; a compile they "
                   "break runs again without them)")
    b.set_defaults(func=cmd_bench)

    g = sub.add_parser("generators", help="list the candidate generators: what each touches, under which policies")
    g.add_argument("--json", action="store_true")
    g.set_defaults(func=cmd_generators)

    for front_end in (serve, worker, submit, admin):
        front_end.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except InputError as exc:  # a user's input: one line, no traceback
        print(f"kernelopt {args.command}: {exc}", file=sys.stderr, flush=True)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"kernelopt {args.command}: interrupted", file=sys.stderr, flush=True)
        return 130


if __name__ == "__main__":
    sys.exit(main())
