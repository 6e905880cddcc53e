"""`kernelopt bench`: every problem of a directory, one job per GPU at a time.

Each problem runs as its own job in its own child process (pinned to one GPU
with CUDA_VISIBLE_DEVICES, killed with everything it started at the time
limit), so N GPUs run N problems at once. Every job of a run has one dtype and one
precision policy, which bench.json and bench.md state (a speedup means little
without them; benchmarks/compare_runs.py puts two runs side by side). Optimized
results are re-checked independently on fresh seeds (`kernelopt check`), in the
run's dtype and policy. The report gives per-level
geometric-mean speedups over the problems whose speed was measured (unsolved
ones count as 1.0; failed ones, and every problem on a machine without a GPU,
are counted apart as not measured), outcome
counts and causes (whole), wall time and GPU-minutes per problem (on a GPU), library share,
regressions and wrong answers, and a plot of the speedup distribution.

A bench given `--stop-after` starts no problem it does not expect to finish
before then (`expected_seconds`: a problem's wall time in an earlier run,
`--expect`, more where that run had another dtype or policy; else its time
limit) and lists those it left for `--resume`: on a lent GPU with a fixed time,
a problem killed half-way is GPU time spent on nothing.
"""
from __future__ import annotations

import dataclasses
import json
import math
import statistics
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from kernelopt.core.outcome import Outcome, cause_code
from kernelopt.core.precision import PrecisionPolicy
from kernelopt.core.text import one_line
from kernelopt.core.tolerance import Dtype
from kernelopt.isolation import ChildError, run_in_child
from kernelopt.isolation.compile_cache import lent
from kernelopt.pipeline.check import CheckRequest, run_check
from kernelopt.pipeline.device import probe_device, share_compile_threads
from kernelopt.pipeline.errors import InputError, require_output_dir
from kernelopt.pipeline.job import run_job
from kernelopt.pipeline.options import NO_GPU_TIMING, JobOptions, not_measured
from kernelopt.pipeline.provenance import engine_fingerprint


@dataclass
class BenchOptions:
    problems_dir: str
    out_dir: str = "runs/bench"
    time_limit_s: Optional[float] = None  # per problem; None: DEFAULT_TIME_LIMITS_S by the problem's level
    precision: str = "strict"  # a verify.precision.PrecisionPolicy value
    dtype: str = "fp32"  # a core.tolerance.Dtype value: the models and inputs are cast to it
    gpus: Optional[int] = None
    only: Optional[str] = None
    resume: bool = False  # keep the rows of an earlier (stopped) run in out_dir; run only the others
    stop_after_s: Optional[float] = None  # start no problem not expected to finish within this (from the start)
    expect_from: Optional[str] = None  # an earlier run's bench.json: per-problem times for `expected_seconds`
    generators: Optional[list[str]] = None  # the jobs' generators (default: the registry's defaults)
    # a directory keeping the compiler caches from job to job (isolation.compile_cache), for a re-run to compile
    # from; each row says how many files its job found there (its compile time is then not a cold one)
    compile_cache: Optional[str] = None


@dataclass(frozen=True)
class RunSettings:
    """What every job of one bench run shares and its numbers depend on: the dtype and the policy."""

    dtype: str = Dtype.FP32.value
    precision: str = PrecisionPolicy.STRICT.value

    def __post_init__(self) -> None:  # the one definition of each (ValueError naming the bad value)
        object.__setattr__(self, "dtype", Dtype.parse(self.dtype).value)
        object.__setattr__(self, "precision", PrecisionPolicy.parse(self.precision).value)

    @classmethod
    def of(cls, opts: BenchOptions) -> "RunSettings":
        try:
            return cls(opts.dtype, opts.precision)
        except ValueError as exc:
            raise InputError(str(exc)) from None

    @classmethod
    def of_summary(cls, summary: dict) -> "RunSettings":
        """A bench.json's settings. Runs written before bench.json stated them were fp32 (bench had no
        --dtype), and their policy is the one their jobs recorded."""
        precision: Optional[str] = summary.get("precision")
        if precision is None:
            recorded = ((r.get("result") or {}).get("precision") for r in summary.get("rows") or [])
            policies: set[str] = {p for p in recorded if p is not None}
            if len(policies) > 1:
                raise ValueError(f"the run mixes precision policies {sorted(policies)}")
            precision = policies.pop() if policies else PrecisionPolicy.STRICT.value
        return cls(summary.get("dtype") or Dtype.FP32.value, precision)

    def label(self) -> str:
        return f"dtype {self.dtype}, precision {self.precision}"


@dataclass
class BenchJob:
    problem_path: str
    workdir: str
    precision: str
    budget_s: float
    dtype: str = "fp32"
    generators: Optional[list[str]] = None
    keep_compile_caches: bool = False


CHECK_TIME_LIMIT_S = 600.0
# What an optimized result's independent check is expected to take where an earlier row did not record it
# (5 seeds in a child: 20-45 s on the H200 over the suite), and the margin over an earlier run's time
# (compile and autotuning vary run to run).
CHECK_EXPECTED_S = 45.0
EXPECT_MARGIN = 1.15
# What an earlier run in another dtype or policy (a strict run's times for a bf16 run) is expected to miss
# per problem: the other run searches other kernels. A Triton kernel at the memory roofline in fp32, which
# the strategy skips, runs below it in bf16 and is searched (20 launch configs: 30-50 s of one kernel on the
# H200), and a problem optimized in one run only has a check in that one. In the bf16 run estimated from
# strict's times (benchmarks/results/2026-12-03-h200-suite-bf16-part2) such problems took 30-96 s longer
# than strict's (three kernels searched: level2/10), and each of its three device calls ended by killing
# one of them half-way (each call's wall time less its rows': 68-104 s, start-up and packing included,
# 15% of the three calls). One search's worth more:
OTHER_SETTINGS_EXTRA_S = 60.0


def expected_seconds(problem: str, earlier: dict[str, dict], time_limit_s: float, extra_s: float = 0.0) -> float:
    """How long `problem` (its path under the problems directory) is expected to take, check included: its
    wall time in an earlier run with a margin (and `extra_s`, where that run had other settings), never above
    the time limit plus a check; without one, the time limit (a job is killed at it) plus a check."""
    row = earlier.get(problem)
    if row is None or not row.get("wall_s"):
        return time_limit_s + CHECK_EXPECTED_S
    check_s = row.get("check_s") or (CHECK_EXPECTED_S if row.get("check") else 0.0)
    return min(float(row["wall_s"]) * EXPECT_MARGIN + extra_s + check_s, time_limit_s + CHECK_EXPECTED_S)


@dataclass(frozen=True)
class ExpectedTimes:
    """An earlier run's per-problem rows (`--expect`) and what to add to each of its times for this run."""

    rows: dict[str, dict]
    extra_s: float = 0.0
    note: Optional[str] = None  # why extra_s, for the log

    def seconds(self, problem: str, time_limit_s: float) -> float:
        return expected_seconds(problem, self.rows, time_limit_s, self.extra_s)


def expected_times(path: Optional[str], run: "RunSettings") -> ExpectedTimes:
    """The times of the bench.json at `path` as this run's estimates (InputError where it cannot be read)."""
    if path is None:
        return ExpectedTimes({})
    try:
        summary = json.loads(Path(path).read_text())
        rows = {r["problem"]: r for r in summary.get("rows") or []}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"--expect {path}: not a bench.json this bench can read ({exc})") from None
    try:
        before: Optional[RunSettings] = RunSettings.of_summary(summary)
    except ValueError:  # a run mixing policies: not this run's settings either
        before = None
    if before == run:
        return ExpectedTimes(rows)
    label = before.label() if before is not None else "a run of mixed settings"
    return ExpectedTimes(rows, OTHER_SETTINGS_EXTRA_S,
                         f"--expect {path} is {label}, this run {run.label()}: each of its times "
                         f"+{OTHER_SETTINGS_EXTRA_S:.0f} s (another dtype or policy searches other kernels)")


def _bench_job(job: BenchJob) -> dict:
    """Child: one job (its own time limit; the independent check runs after, with its own)."""
    t0 = time.monotonic()
    options = JobOptions(precision=job.precision, dtype=job.dtype, time_budget_s=job.budget_s)
    if job.generators:
        options = dataclasses.replace(options, generators=list(job.generators))
    result = run_job(job.problem_path, job.workdir, options, keep_compile_caches=job.keep_compile_caches)
    return {"result": result.to_dict(), "wall_s": time.monotonic() - t0}


def _check(arg: tuple) -> dict:
    workdir, problem, precision, dtype = arg
    try:
        return run_check(CheckRequest(str(Path(workdir) / "optimized_module.py"), str(problem),
                                      precision=precision, dtype=dtype), timeout_s=CHECK_TIME_LIMIT_S)
    except InputError as exc:  # CheckError included: a result that cannot be re-checked is not a pass
        return {"passed": False, "ran": False, "summary": f"FAIL: {exc}"}


def _check_in_child(workdir: Path, problem: Path, precision: str, dtype: str, env: dict) -> dict:
    try:
        # The bench's check orchestrates (its own children are sandboxed): a trusted child.
        return run_in_child(_check, (str(workdir), str(problem), precision, dtype), timeout_s=CHECK_TIME_LIMIT_S + 30,
                            env=env, trusted=True, scratch=workdir)
    except ChildError as exc:
        return {"passed": False, "ran": False, "summary": f"FAIL: the check could not run: {exc}"}


def _level(path: Path, root: Path) -> str:
    rel = path.relative_to(root)
    return rel.parts[0] if len(rel.parts) > 1 else "all"


def find_problems(problems_dir: str, only: Optional[str] = None) -> tuple[list[Path], Path]:
    """The problem files under `problems_dir` (those `only` selects), or InputError before anything runs."""
    root = Path(problems_dir).resolve()
    if not root.exists():
        raise InputError(f"problem directory {problems_dir} does not exist")
    if not root.is_dir():
        raise InputError(f"{problems_dir} is a file; bench takes a directory of problems "
                         "(optimize takes one problem file)")
    problems = sorted(p for p in root.rglob("*.py") if not p.name.startswith("_"))
    if not problems:
        raise InputError(f"no problem files (*.py) under {problems_dir}")
    if only is not None:  # comma-separated substrings of the problem paths
        wanted = [w for w in only.split(",") if w]
        selected = [p for p in problems if any(w in str(p.relative_to(root)) for w in wanted)]
        if not selected:
            raise InputError(f"--only {only!r} matches none of the {len(problems)} problems under {problems_dir}")
        problems = selected
    return problems, root


# What a bench leaves in its --out from its start (BENCH_MARK) and after its first problem (bench.json): a
# directory holding other files is refused, never written into (pipeline.errors.require_output_dir).
BENCH_MARK = ".kernelopt-bench"
BENCH_MARKERS = (BENCH_MARK, "bench.json")
JOB_START_S = 30.0  # of each problem's time limit, kept for its child's start and its report
# Each problem's time limit when --time-limit gives none, by its level folder. Over the H200 suite runs
# (381 rows of benchmarks/results/2026-12-0*/bench.json) the longest level-1 problem took 126 s, level 2 145 s,
# level 3's small models 210 s: 300 s is twice the first two. Level 3's full networks (level3/12-21) are not
# measured yet; 900 s gives each a quarter hour. Any other folder (kernel files): 300 s.
DEFAULT_TIME_LIMITS_S = {"level1": 300.0, "level2": 300.0, "level3": 900.0}
OTHER_TIME_LIMIT_S = 300.0


def time_limit_s(level: str, given: Optional[float]) -> float:
    """A problem's time limit: --time-limit's, else its level's default."""
    return given if given is not None else DEFAULT_TIME_LIMITS_S.get(level, OTHER_TIME_LIMIT_S)


def limits_text(rows: list[dict]) -> str:
    """The time limits the rows ran under, per level (rows of runs before limits were recorded say nothing)."""
    by_level = sorted({(r["level"], r["time_limit_s"]) for r in rows if r.get("time_limit_s")})
    return ", ".join(f"{level} {limit:.0f} s" for level, limit in by_level) or "not recorded"


def run_bench(opts: BenchOptions) -> dict:
    problems, root = find_problems(opts.problems_dir, opts.only)
    if Path(opts.out_dir).exists() and not Path(opts.out_dir).is_dir():
        raise InputError(f"--out {opts.out_dir} is a file, not a directory")
    if opts.time_limit_s is not None and not (math.isfinite(opts.time_limit_s) and opts.time_limit_s > JOB_START_S):
        raise InputError(f"--time-limit must be a finite number of seconds above {JOB_START_S:.0f} (each job gets "
                         f"{JOB_START_S:.0f} s less, for its start and its report), got {opts.time_limit_s}")
    run = RunSettings.of(opts)
    out = Path(opts.out_dir).resolve()
    rows, earlier_wall_s = _earlier_rows(out, run) if opts.resume else ([], 0.0)
    if opts.stop_after_s is not None and not opts.stop_after_s > 0:  # NaN too
        raise InputError("--stop-after must be positive")
    earlier = expected_times(opts.expect_from, run)
    # the last check: it creates the directory (never writing into one that holds files of its own)
    require_output_dir(opts.out_dir, "--out", BENCH_MARKERS)
    (out / BENCH_MARK).write_text("kernelopt bench writes into this directory (its --out)\n")
    info = probe_device()
    n_gpus = max(1, min(opts.gpus or info.count or 1, info.count or 1)) if info.cuda else 0
    done = {r["problem"] for r in rows}
    pending = [p for p in problems if str(p.relative_to(root)) not in done]
    limits = {p: time_limit_s(_level(p, root), opts.time_limit_s) for p in pending}
    expected = {p: earlier.seconds(str(p.relative_to(root)), limits[p]) for p in pending}
    if earlier.note and opts.stop_after_s is not None:
        print(earlier.note, flush=True)
    lock = threading.Lock()
    t_start = time.monotonic() - earlier_wall_s
    deadline = None if opts.stop_after_s is None else time.monotonic() + opts.stop_after_s
    started: list[Path] = []
    engine = engine_fingerprint()  # per row: the earlier rows of a resumed run may come from another engine

    def next_problem() -> Optional[Path]:
        """The first pending problem expected to finish before the deadline (under the lock)."""
        if not pending:
            return None
        if deadline is None:
            return pending.pop(0)
        left = deadline - time.monotonic()
        fits = [p for p in pending if expected[p] <= left]
        if not fits and not started:  # nothing fits a whole run: start the shortest rather than nothing
            fits = [min(pending, key=expected.__getitem__)]
        if not fits:
            return None
        pending.remove(fits[0])
        started.append(fits[0])
        return fits[0]

    cache_slot = Path(opts.compile_cache).resolve() if opts.compile_cache else None

    slot_envs = share_compile_threads([{"CUDA_VISIBLE_DEVICES": str(g)} for g in range(n_gpus)]) if info.cuda else []

    def worker(gpu: int) -> None:
        while True:
            with lock:
                p = next_problem()
            if p is None:
                return
            level = _level(p, root)
            workdir = out / level / p.stem
            env = slot_envs[gpu] if info.cuda else {"TRITON_INTERPRET": "1"}
            t0 = time.monotonic()
            try:
                # taken back also from a job killed at its limit: what its compile got through is kept
                with lent(cache_slot, workdir):
                    row = run_in_child(_bench_job, BenchJob(str(p), str(workdir), run.precision,
                                                            limits[p] - JOB_START_S, run.dtype, opts.generators,
                                                            keep_compile_caches=cache_slot is not None),
                                       timeout_s=limits[p], env=env,
                                       trusted=True, scratch=workdir)  # the job's orchestrator; stages sandboxed
            except ChildError as exc:
                row = {"result": {"outcome": "fallback", "cause": f"{exc.kind}: {exc.message}", "speedup": 1.0}}
                if not info.cuda:
                    row["result"] = not_measured(row["result"], NO_GPU_TIMING)
            row.update(problem=str(p.relative_to(root)), level=level, name=p.stem, gpu=gpu if info.cuda else None,
                       time_limit_s=limits[p],
                       wall_s=round(time.monotonic() - t0, 1), engine=engine)
            if row["result"]["outcome"] == "optimized":
                # Not counted in the job's wall time or limit: the check is the bench's, not the job's.
                t_check = time.monotonic()
                row["check"] = _check_in_child(workdir, p, run.precision, run.dtype, env)
                row["check_s"] = round(time.monotonic() - t_check, 1)
            row.update(_details(workdir))
            with lock:
                rows.append(row)
                # The report so far, after every problem: a bench stopped early keeps what it measured.
                _write_summary(out, rows, time.monotonic() - t_start, n_gpus, info, run)
                speed = deployed_speedup(row)
                print(f"[{f'gpu {gpu}' if info.cuda else 'cpu'}] {row['problem']}: {row['result']['outcome']}"
                      f"{'' if speed is None else f' {speed:.3f}x'} — {one_line(row['result']['cause'])} "
                      f"({row['wall_s']:.0f} s)", flush=True)

    threads = [threading.Thread(target=worker, args=(g,)) for g in range(max(n_gpus, 1))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    left = [str(p.relative_to(root)) for p in pending]  # what the deadline left for --resume
    summary = _write_summary(out, rows, time.monotonic() - t_start, n_gpus, info, run, left)
    _plot(summary["rows"], out / "speedups.png")
    return summary


def _write_summary(out: Path, rows: list[dict], wall_s: float, n_gpus: int, info, run: "RunSettings",
                   not_started: Optional[list[str]] = None) -> dict:
    summary = summarize(sorted(rows, key=lambda r: r["problem"]), wall_s, n_gpus, info, run, not_started)
    (out / "bench.json").write_text(json.dumps(summary, indent=1, default=str))
    (out / "bench.md").write_text(summary["text"])
    return summary


def _earlier_rows(out: Path, run: "RunSettings") -> tuple[list[dict], float]:
    """The finished rows and wall time of an earlier run into `out`, if any.

    An earlier run in another dtype or policy is refused (InputError): its rows
    would be reported, and geomeaned, as if they were this run's.
    """
    try:
        earlier = json.loads((out / "bench.json").read_text())
    except (OSError, ValueError):
        return [], 0.0
    try:
        before = RunSettings.of_summary(earlier)
    except ValueError as exc:
        raise InputError(f"--resume: the run in {out} cannot be resumed: {exc}") from None
    if before != run:
        raise InputError(f"--resume: the run in {out} is {before.label()}, this one {run.label()}; "
                         "resume it with the same --dtype and --precision, or use another --out")
    return list(earlier.get("rows") or []), float(earlier.get("wall_min") or 0.0) * 60


def _details(workdir: Path) -> dict:
    try:
        report = json.loads((workdir / "report.json").read_text())
    except (OSError, ValueError):
        return {}
    prof = report.get("profile") or {}
    cap = report.get("capture") or {}
    rewrite = report.get("rewrite") or {}
    return {"library_share": prof.get("library_share"), "triton_share": prof.get("triton_share"),
            "compile_s": cap.get("compile_seconds"),
            "compile_cache_files": (report.get("compile_cache") or {}).get("files"),
            "restitch_bit_exact": cap.get("restitch_bit_exact"),
            "reproduction": cap.get("reproduction"),
            "context_ms": report.get("context_timings"),
            # the graph rewrites: what applied, whether the rewritten graph was deployed, what they proved
            "rewrites": [a.get("identity") for a in rewrite.get("applied") or []],
            "rewrite_deployed": rewrite.get("verdict") == "deployed",
            # the compile variants (compiled/variants.py): the one deployed, if any
            "variant_deployed": next((v["variant"] for v in report.get("compile_variants") or []
                                      if v.get("verdict") == "deployed"), None),
            "findings": list(rewrite.get("findings") or [])}


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def deployed_speedup(row: dict) -> Optional[float]:
    """The speedup a problem deploys (1.0 where the compiler's code is kept); None where none was measured."""
    r = row["result"]
    if r.get("timing") == "not-measured" or (r.get("speedup") is None and r["outcome"] == "failed"):
        return None
    return float(r["speedup"]) if r["outcome"] == "optimized" and r.get("speedup") else 1.0


def _geomean_measured(rows: list[dict]) -> Optional[float]:
    values = [v for v in map(deployed_speedup, rows) if v is not None]
    return _geomean(values) if values else None


def summarize(rows: list[dict], wall_s: float, n_gpus: int, info, run: Optional["RunSettings"] = None,
              not_started: Optional[list[str]] = None) -> dict:
    run = run or RunSettings()
    # a degenerate model (an identity proved its output independent of an input, or constant) is usually a
    # bug in the model: its speedup is real but says nothing of the engine, so it is counted apart
    degenerate = [r for r in rows if r.get("findings")]
    counted = [r for r in rows if not r.get("findings")]
    levels = sorted({r["level"] for r in counted})
    geo = {lv: _geomean_measured([r for r in counted if r["level"] == lv]) for lv in levels}
    geo["all"] = _geomean_measured(counted)
    rewritten = [r["problem"] for r in rows if r.get("rewrite_deployed")]
    variants = [f"{r['problem']} ({r['variant_deployed']})" for r in rows if r.get("variant_deployed")]
    not_measured_rows = [r for r in rows if deployed_speedup(r) is None]
    # plain strings: an Outcome printed inside a dict shows as <Outcome.FALLBACK: 'fallback'>
    outcomes = Counter(Outcome(r["result"]["outcome"]).value for r in rows)
    causes = Counter(cause_code(r["result"]["cause"]) for r in rows if r["result"]["outcome"] != "optimized")
    regressions = [r["problem"] for r in rows if r["result"]["outcome"] == "optimized"
                   and (deployed_speedup(r) or 1.0) < 1.0 - (r["result"].get("noise_pct") or 0) / 100]
    # a check that ran and failed is a wrong answer; one that could not run leaves the result unchecked (not a
    # pass either: both are listed)
    wrong = [r["problem"] for r in rows if r.get("check") and not r["check"]["passed"] and r["check"].get("ran", True)]
    unchecked = [r["problem"] for r in rows if r.get("check") and r["check"].get("ran") is False]
    not_exact = [r["problem"] for r in rows if r.get("restitch_bit_exact") is False]
    nondeterministic = [r["problem"] for r in rows if r.get("reproduction") == "within-nondeterminism"]
    engines = Counter(r.get("engine") or "unrecorded" for r in rows)
    noisy = max((r for r in rows if r["result"].get("noise_pct") is not None and deployed_speedup(r) is not None),
                key=lambda r: r["result"]["noise_pct"], default=None)
    walls = [r["wall_s"] for r in rows]
    median_wall = statistics.median(walls) / 60 if walls else 0.0
    cuda = bool(getattr(info, "cuda", True))
    where = (f"{n_gpus} GPU(s), {info.name}" if cuda else
             "on the CPU: no GPU, single-kernel problems on the Triton interpreter, no speed measured")
    lines = [f"# kernelopt bench ({len(rows)} problems, {where}, torch {info.torch_version})",
             "", f"Run: {run.label()} (every job cast to {run.dtype}; Gates 2-3 tolerances and Gate 3's "
             f"policy as core.tolerance sets them; docs/architecture.md, Gates).",
             "", f"Wall time {wall_s / 60:.1f} min; median per problem {median_wall:.2f} min "
             f"(compile included)" + (f"; GPU-minutes {sum(walls) / 60:.1f}." if cuda else "."),
             f"Time limit per problem: {limits_text(rows)}.", "",
             _geomean_text(geo, counted, [r for r in not_measured_rows if r in counted]), "",
             f"Graph rewrites deployed: {len(rewritten)} {rewritten}",
             f"Compile variants deployed: {len(variants)} {variants}",
             f"Degenerate models (an identity proved the output independent of an input, or constant; usually a "
             f"bug in the model; not in the geomean): {len(degenerate)} "
             + str([f"{r['problem']} ({_speed_text(r)})" for r in degenerate]), "",
             f"Outcomes: {dict(outcomes)}", f"Causes (not optimized): {dict(causes)}",
             f"Regressions: {len(regressions)} {regressions}", f"Wrong answers (kernelopt check): {len(wrong)} {wrong}",
             f"Not re-checked (kernelopt check could not run): {len(unchecked)} {unchecked}",
             f"Re-stitch not bit-exact: {len(not_exact)} {not_exact}"
             + (f" (of which within the compiled model's own non-determinism: {nondeterministic})"
                if nondeterministic else ""),
             "Largest noise (the spread each result states with its speed): "
             + (f"{noisy['result']['noise_pct']:.2f}% ({noisy['problem']})" if noisy else "none measured"),
             "", _engine_text(engines), "",
             *([f"Not started ({len(not_started)}; the --stop-after deadline left too little time for them, "
                f"--resume runs them): {', '.join(not_started)}", ""] if not_started else []),
             "| problem | outcome | speedup | library share | compile s | wall s | stage s (L/C/R/Va/P/S/V) | check | cause |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        res = r["result"]
        ls = r.get("library_share")
        check = "" if not r.get("check") else ("pass" if r["check"]["passed"] else
                                               "FAIL" if r["check"].get("ran", True) else "could not run")
        speed = deployed_speedup(r)
        lines.append(f"| {r['problem']} | {res['outcome']} | {'not measured' if speed is None else f'{speed:.3f}'} | "
                     f"{'' if ls is None else f'{ls:.1%}'} | {r.get('compile_s') or ''} | {r['wall_s']:.0f} | "
                     f"{_stage_cell(res.get('stage_seconds') or {})} | {check} | {_cell(res['cause'])} |")
    return {"dtype": run.dtype, "precision": run.precision, "device": info.name, "torch": info.torch_version,
            "rows": rows, "geomean": geo, "outcomes": dict(outcomes), "causes": dict(causes),
            "regressions": len(regressions), "wrong_answers": len(wrong), "not_rechecked": unchecked,
            "restitch_not_exact": not_exact,
            "not_measured": len(not_measured_rows), "engines": dict(engines),
            "rewrites_deployed": rewritten, "variants_deployed": variants, "degenerate": [r["problem"] for r in degenerate],
            "max_noise_pct": noisy["result"]["noise_pct"] if noisy else None,
            "median_wall_min": statistics.median(walls) / 60 if walls else None,
            "not_started": list(not_started or []),
            "wall_min": wall_s / 60, "gpus": n_gpus if cuda else 0, "text": "\n".join(lines) + "\n"}


def _cell(text: str) -> str:
    """A whole message as one cell of a markdown table: on one line, its pipes escaped."""
    return one_line(text).replace("|", "\\|")


def _speed_text(row: dict) -> str:
    speed = deployed_speedup(row)
    return "not measured" if speed is None else f"{speed:.3f}x"


def _engine_text(engines: Counter) -> str:
    """Which engine source ran the rows (pipeline.provenance); a resumed run may mix them, and says so."""
    if len(engines) <= 1:
        return f"Engine source: {next(iter(engines), 'none')} (pipeline.provenance fingerprint)."
    mixed = ", ".join(f"{e}: {n} row(s)" for e, n in sorted(engines.items()))
    return (f"Engine source: MIXED — the rows come from {len(engines)} engines ({mixed}); compare rows of one "
            "engine only.")


def _geomean_text(geo: dict, rows: list[dict], not_measured_rows: list[dict]) -> str:
    if not rows:
        return "Geomean speedup vs compiler baseline: no problem finished."
    if len(not_measured_rows) == len(rows):
        notes = sorted({r["result"].get("timing_note") or "" for r in rows} - {""})
        return f"Geomean speedup vs compiler baseline: not measured ({'; '.join(notes) or 'no speed measured'})."
    text = ("Geomean speedup vs compiler baseline (unsolved = 1.0): "
            + ", ".join(f"{k} {'not measured' if v is None else f'{v:.3f}x'}" for k, v in geo.items()))
    if not_measured_rows:
        text += f" (over the problems whose speed was measured; {len(not_measured_rows)} not measured)"
    return text


def _stage_cell(stage_seconds: dict) -> str:
    """Seconds in load/compile/rewrite/variants/profile/search/verify, '-' for a stage the job never reached."""
    stages = ("load", "compile", "rewrite", "variants", "profile", "search", "verify")
    return "/".join(f"{stage_seconds[s]:.0f}" if s in stage_seconds else "-" for s in stages)


def _plot(rows: list[dict], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    measured = [(r, speedup) for r in rows if (speedup := deployed_speedup(r)) is not None]
    if not measured:
        return  # nothing to plot: no speed was measured
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for lv in sorted({r["level"] for r, _ in measured}):
        ax.scatter([r["name"][:18] for r, _ in measured if r["level"] == lv],
                   [speedup for r, speedup in measured if r["level"] == lv], label=lv, s=18)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_ylabel("deployed speedup vs torch.compile")
    ax.tick_params(axis="x", rotation=90, labelsize=6)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
