"""Gates 3 and 4 on a whole model, in the job's children: the one sequence every whole-model candidate takes
(a combination of replaced kernels from the waterfall, or a rewritten graph)."""
from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from kernelopt.compiled.graph import CapturedGraph
from kernelopt.core.timing import Timing, merge_timings
from kernelopt.pipeline.context import JobContext, JobFailed
from kernelopt.verify.gate3_judge import JudgeRequest, judge_gate3
from kernelopt.verify.gate4_perf import MORE_ROUNDS, check_performance, needs_more_rounds
from kernelopt.verify.model_outputs import (
    OutputRole,
    OutputsManifest,
    OutputsRequest,
    candidate_outputs,
    reference_outputs,
)
from kernelopt.verify.result import GateResult
from kernelopt.verify.stitched_model import StitchedRequest, time_stitched


@dataclass
class ModelVerdict:
    gate3: GateResult
    gate4: Optional[GateResult] = None  # None: Gate 3 failed, or no GPU to time on
    timing: Optional[Timing] = None

    @property
    def passed(self) -> bool:
        return self.gate3.passed and self.gate4 is not None and self.gate4.passed


def gate3(ctx: JobContext, req: StitchedRequest) -> GateResult:
    """Gate 3 computed apart: eager's outputs from one child (once per job, in a directory no candidate's child
    can reach), the candidate's from another, the verdict from a third that runs no submitted or generated
    code (verify/model_outputs.py, verify/gate3_judge.py)."""
    seeds = tuple(req.seeds)
    # the baseline's source, for the precision contract: read once per job, before this gate's candidate runs
    baseline_source = ctx.baseline_sources.setdefault(
        req.workdir, Path(CapturedGraph.load(req.workdir).module_path).read_text())
    ref_dir = ctx.private_reference_dir()
    out_req = OutputsRequest(req.problem_path, req.workdir, str(ref_dir), list(seeds), req.dtype, req.device)
    reference = ctx.reference_manifests.get(seeds)
    if reference is None:
        reference = ctx.child(reference_outputs, out_req, limit_s=600, what="Gate 3 (eager reference)",
                              scratch=ref_dir, read_only=ctx.sandbox_read_only + (str(ctx.workdir),))
        if not isinstance(reference, OutputsManifest):
            return GateResult.fail("gate3", "the eager reference's child answered with something that is not a "
                                   "manifest of its outputs", branch="outputs", rho=None)
        ctx.reference_manifests[seeds] = reference
    cand_dir = Path(req.workdir) / "gate3" / f"candidate-{len(ctx.reference_manifests)}-{time.monotonic_ns()}"
    cand_dir.mkdir(parents=True, exist_ok=True)
    judge_scratch = Path(tempfile.mkdtemp(prefix="kernelopt-judge-"))
    try:
        candidate = ctx.child(candidate_outputs, dataclasses.replace(
            out_req, out_dir=str(cand_dir), replacements=dict(req.replacements), candidate_dir=req.candidate_dir,
            float64=False), limit_s=600, what="Gate 3 (candidate)")
        if not isinstance(candidate, OutputsManifest) or candidate.role != OutputRole.CANDIDATE.value:
            # what the candidate's process answers is data to check, never a verdict (a forged GateResult, say)
            return GateResult.fail("gate3", "the candidate's child answered with something that is not a manifest "
                                   f"of its outputs ({type(candidate).__name__})", branch="outputs", rho=None)
        judged = ({"the rewritten graph": Path(CapturedGraph.load(req.candidate_dir).module_path).read_text()}
                  if req.candidate_dir else dict(req.replacements))
        judge = JudgeRequest(str(ref_dir), str(cand_dir), reference, candidate, list(seeds), req.precision,
                             req.rho_max, req.dtype, judged, baseline_source, dict(req.library_ops),
                             dict(req.library_modes))
        verdict = ctx.child(judge_gate3, judge, limit_s=600, what="Gate 3 (judge)", scratch=judge_scratch,
                            read_only=(str(ref_dir), str(cand_dir)))
        if not isinstance(verdict, GateResult) or verdict.gate != "gate3":
            raise JobFailed(f"Gate 3's judge answered with {type(verdict).__name__}, not a verdict")
        return verdict
    finally:
        shutil.rmtree(cand_dir, ignore_errors=True)
        shutil.rmtree(judge_scratch, ignore_errors=True)


def gates_3_4(ctx: JobContext, req: StitchedRequest, gamma: float, timed: bool = True) -> ModelVerdict:
    """Gate 3 (against eager, float64 fallback), then Gate 4 (interleaved timing; more rounds when the first
    five cannot tell). `timed=False` stops after Gate 3 (no GPU: no speed is measured)."""
    g3 = gate3(ctx, req)
    if not g3.passed or not timed:
        return ModelVerdict(g3)
    timing = ctx.child(time_stitched, req, limit_s=600, what="Gate 4 timing")
    g4 = check_performance(timing.rounds["baseline"], timing.rounds["candidate"], gamma)
    if needs_more_rounds(g4):  # too noisy to tell from 5 rounds: measure more, decide on all of them
        more = ctx.child(time_stitched, dataclasses.replace(req, rounds=MORE_ROUNDS), limit_s=600,
                         what="Gate 4 timing (more rounds)")
        timing = merge_timings(timing, more)
        g4 = check_performance(timing.rounds["baseline"], timing.rounds["candidate"], gamma)
    return ModelVerdict(g3, g4, timing)


def gate3_text(metrics: dict) -> str:
    """Gate 3's branch, with rho where that branch computed one (no 'rho None' in a report)."""
    rho = metrics.get("rho")
    return f"{metrics.get('branch')}, rho {rho:.3g}" if rho is not None else str(metrics.get("branch"))
