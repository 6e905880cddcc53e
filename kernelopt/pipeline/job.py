"""One job, stage by stage (docs/architecture.md, Stages): load → compile/capture → decompose → profile →
search → re-stitch + verify → report.

The orchestrating process never touches CUDA or runs submitted code: every such
stage is a typed function run in a child (isolation), with a time limit drawn
from the job's budget. Cancellation is honoured between stages.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Optional

from kernelopt.compiled.graph import WEIGHTS_FILE
from kernelopt.core.jobfiles import PlantedFile
from kernelopt.core.outcome import Cause, Outcome
from kernelopt.core.tolerance import Dtype
from kernelopt.isolation import job_sandbox
from kernelopt.isolation.compile_cache import CACHE_DIR, measure
from kernelopt.isolation.sandbox import SANDBOX_DIRS, give_to
from kernelopt.load.helion_file import helion_installed, is_helion_file
from kernelopt.load.problem import ProblemError, problem_kind
from kernelopt.load.stage import LoadRequest, LoadResult, import_model_file, load_problem
from kernelopt.pipeline.context import JobCancelled, JobContext, JobFailed, JobFallback
from kernelopt.pipeline.device import NO_GPU_MESSAGE, probe
from kernelopt.pipeline.errors import InputError, require_file
from kernelopt.pipeline.options import (
    NO_GPU_TIMING,
    NO_TIMING_FAILED,
    NO_TIMING_NO_DEVICE,
    CancelCheck,
    EventSink,
    JobOptions,
    JobResult,
)
from kernelopt.pipeline.report import render_markdown, to_jsonable, write_json, write_safely
from kernelopt.verify.interpreter import InterpreterProbe, interpreter_cannot_run


def run_job(problem_path: str, workdir: str | Path, options: JobOptions | None = None,
            on_event: Optional[EventSink] = None, should_cancel: Optional[CancelCheck] = None,
            weights_path: str | Path | None = None, llm_settings: Any = None,
            avoid: list[dict] | None = None, keep_compile_caches: bool = False) -> JobResult:
    """Run one optimization job; always returns a JobResult and writes report.json.

    `failed` is for a submission that cannot be run (with the reason); every
    other ending deploys either the verified optimized model or the compiler's.
    `weights_path`: a safetensors file loaded into the model (model mode).
    `llm_settings` (agents.llm.LLMSettings) and `avoid` (the team's AVOID list,
    [{"strategy", "attempts", "successes", "jobs"}]) are for the LLM agents.
    `keep_compile_caches`: leave the children's compiler caches (`<workdir>/.cache`) for the caller to keep
    for the next job (`isolation.compile_cache`); the report says what the job found there when it started.
    Raises InputError, before creating anything, when there is no problem file to
    run (missing, a directory) or `workdir` is not a directory.
    """
    options = options or JobOptions()
    require_file(problem_path, "problem file")
    if weights_path is not None:
        require_file(weights_path, "weights file")
    if Path(workdir).exists() and not Path(workdir).is_dir():
        raise InputError(f"work directory {workdir} is a file")
    ctx = JobContext(str(Path(problem_path).resolve()), Path(workdir).resolve(), options, on_event, should_cancel,
                     llm_settings=llm_settings, avoid=list(avoid or []))
    shutil.copyfile(ctx.problem_path, ctx.workdir / "problem.py")
    if weights_path is not None:
        shutil.copyfile(weights_path, ctx.workdir / WEIGHTS_FILE)
        ctx.weights = str(ctx.workdir / WEIGHTS_FILE)
    ctx.report = {"problem": {"path": ctx.problem_path, "name": Path(problem_path).stem},
                  "options": options.to_dict()}
    if keep_compile_caches:
        note_compile_caches(ctx)
    try:
        with job_sandbox():  # one sandbox uid for all of this job's children
            result = _run(ctx)
    except JobCancelled:
        result = JobResult(Outcome.FAILED, "cancelled", error="the job was cancelled")
    except JobFailed as exc:
        result = JobResult(Outcome.FAILED, str(exc).split("\n")[0], error=str(exc))
    except JobFallback as exc:
        result = JobResult(Outcome.FALLBACK, f"{exc.code}: {exc}", speedup=1.0)
    except ProblemError as exc:
        result = JobResult(Outcome.FAILED, str(exc), error=str(exc))
    except PlantedFile as exc:  # a child left a link where the job keeps a file of its own: never written through
        result = JobResult(Outcome.FAILED, str(exc), error=str(exc))
    except Exception as exc:  # an engine bug must still end the job with a record of it
        import traceback

        result = JobResult(Outcome.FAILED, f"internal error: {type(exc).__name__}: {exc}",
                           error=traceback.format_exc())
    ctx.setup_session.close()
    reclaim_workdir(ctx.workdir, keep=(CACHE_DIR,) if keep_compile_caches else ())
    if ctx.device is None:
        result.not_measured(NO_TIMING_NO_DEVICE)
    elif not ctx.device.cuda:
        result.not_measured(NO_GPU_TIMING)  # interpreter times say nothing about a GPU
    elif result.outcome == "failed":
        result.not_measured(NO_TIMING_FAILED)
    result.precision, result.dtype = options.precision, options.dtype
    result.stage_seconds = dict(ctx.stage_seconds)
    agents = ctx.agents_report()
    if agents is not None:
        ctx.report["agents"] = agents
    ctx.report["result"] = result.to_dict()
    ctx.report = to_jsonable(ctx.report)
    write_json(ctx.workdir / "report.json", ctx.report)
    write_safely(ctx.workdir / "report.md", render_markdown(ctx.report))
    # Not following links: the sandboxed children wrote here too (a link may lead where this uid cannot look).
    result.artifacts = sorted(e.name for e in os.scandir(ctx.workdir) if e.is_file(follow_symlinks=False))
    ctx.report["result"]["artifacts"] = result.artifacts
    write_json(ctx.workdir / "report.json", ctx.report)
    ctx.emit("report", "stage_finished", f"{result.outcome}: {result.cause}", outcome=result.outcome,
             speedup=result.speedup)
    ctx.close()
    return result


def note_compile_caches(ctx: JobContext) -> None:
    """What the job found of earlier jobs' compiler caches (isolation.compile_cache) before its first child, in
    its report: a compile from them is not a cold one (and model_job.capture_baseline drops them on failure)."""
    found = measure(ctx.workdir / CACHE_DIR)
    ctx.report["compile_cache"] = {"files": found.files, "bytes": found.bytes}


def reclaim_workdir(workdir: Path, keep: tuple[str, ...] = ()) -> None:
    """After the job's children: drop their home and caches (but those in `keep`), and give the files back to
    this process's user.

    The children ran as the job's sandbox uid and owned the directory; a user who
    ran `kernelopt optimize` as root gets a directory of their own back.
    """
    for name in SANDBOX_DIRS:
        if name not in keep:
            shutil.rmtree(workdir / name, ignore_errors=True)
    give_to(workdir, os.geteuid())


def children_env(interpreter: bool, helion: bool) -> dict | None:
    """What every stage child of the job is given beyond the sandbox's own environment: the Triton interpreter
    without a GPU; for a Helion kernel file, no autotuning at load (a kernel that pins no config runs Helion's
    default; the search is this job's, not Helion's autotuner: minutes to hours per kernel)."""
    env = {"TRITON_INTERPRET": "1"} if interpreter else {}
    if helion:
        env["HELION_AUTOTUNE_EFFORT"] = "none"
    return env or None


def _run(ctx: JobContext) -> JobResult:
    with ctx.stage("load", "importing the submission in a child process"):
        ctx.device = ctx.child(probe, None, limit_s=120, what="probing the device", session=ctx.setup_session)
        ctx.report["device"] = ctx.device
        interpreter = not ctx.device.cuda
        if interpreter and problem_kind(ctx.problem_path) == "model":
            # Imported (a broken file is still `failed`), never built: the model may be huge.
            ctx.child(import_model_file, ctx.problem_path, limit_s=300, what="importing the model file",
                      session=ctx.setup_session)
            raise JobFallback(Cause.NO_GPU, f"{NO_GPU_MESSAGE} Nothing was compiled, so the model itself is kept.")
        device = "cpu" if interpreter else "cuda"
        helion = is_helion_file(ctx.problem_path)
        if helion and not helion_installed():
            raise JobFailed(f"{Path(ctx.problem_path).name} is a Helion kernel file, and helion is not installed "
                            "where this job runs (pip install 'kernelopt[helion]')")
        env = children_env(interpreter, helion)
        if env:  # Triton reads TRITON_INTERPRET when imported: the session must start with it (and Helion's)
            ctx.setup_session.close()
            ctx.setup_session = ctx.session(env)
        if interpreter:
            # bf16 arithmetic on the interpreter can be silently wrong (verify.interpreter): say so, not "incorrect"
            # and Helion's generated code may use what the interpreter lacks: say so, not "failed"
            why = None if Dtype.parse(ctx.options.dtype) is Dtype.FP32 and not helion else ctx.child(interpreter_cannot_run, InterpreterProbe(ctx.problem_path, ctx.options.dtype),
                            limit_s=300, what=f"running the kernel on the Triton interpreter in {ctx.options.dtype}",
                            session=ctx.setup_session)
            if why:
                raise JobFallback(Cause.NO_GPU, f"{why}. Nothing was searched: the original kernel is kept.")
        load: LoadResult = ctx.child(load_problem, LoadRequest(ctx.problem_path, ctx.options.dtype, device,
                                                               ctx.weights),
                                     limit_s=300, what="loading the problem", session=ctx.setup_session)
        ctx.report["load"] = load
        ctx.emit("load", "progress", f"{load.kind} problem {load.name}: outputs {load.output_shapes}",
                 problem_kind=load.kind, deterministic=load.deterministic)
    # The kernel-file and model paths are imported when taken: they import torch (for the stage functions
    # they run in children), which the orchestrator's own process never needs.
    if load.kind == "kernel":
        from kernelopt.pipeline.kernel_job import run_kernel_job

        ctx.setup_session.close()  # kernel mode's stages run in children of their own
        return run_kernel_job(ctx, load, device, env)
    if interpreter:  # decided by the same parse as above; kept for safety
        raise JobFallback(Cause.NO_GPU, NO_GPU_MESSAGE)
    from kernelopt.pipeline.model_job import run_model_job

    return run_model_job(ctx, load)
