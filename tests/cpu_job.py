"""The model job as a CPU machine runs it (no CUDA: Inductor's C++ backend, Gates 1-3, no speed), for the tests of
the model stages."""
from __future__ import annotations

from pathlib import Path

import torch

from kernelopt.load.stage import LoadRequest, load_problem
from kernelopt.pipeline.context import JobContext
from kernelopt.pipeline.device import DeviceInfo
from kernelopt.pipeline.job import note_compile_caches
from kernelopt.pipeline.model_job import run_model_job
from kernelopt.pipeline.options import JobOptions, JobResult


def cpu_model_job(problem: Path, workdir: Path, options: JobOptions | None = None,
                  compile_caches: bool = False) -> tuple[JobContext, JobResult]:
    """(the job's context, closed, its report kept; its result) for `problem` under `options` (600 s by default);
    `compile_caches`: the job starts from what `workdir/.cache` holds, as a job lent earlier jobs' caches does."""
    ctx = JobContext(str(problem), workdir, options or JobOptions(time_budget_s=600))
    if compile_caches:
        note_compile_caches(ctx)
    ctx.device = DeviceInfo(cuda=False, name="cpu", count=0, torch_version=torch.__version__,
                            triton_version="", ncu=False)
    load = load_problem(LoadRequest(str(problem), device="cpu"))
    try:
        return ctx, run_model_job(ctx, load)
    finally:
        ctx.close()
