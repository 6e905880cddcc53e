"""What Gates 3 and 4 verify: a re-stitched model (`StitchedRequest`), and Gate 3 in one process for tools and tests.

A job computes both gates apart (pipeline/gates.py): Gate 3 from the outputs of an eager child and a
candidate child, judged by a third (verify/model_outputs.py, verify/gate3_judge.py); Gate 4 from two timing
processes, one per side (verify/timing_apart.py), checked against the orchestrator's clock.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from kernelopt.compiled.restitch import ModelContext
from kernelopt.verify.result import GateResult


@dataclass
class StitchedRequest:
    problem_path: str
    workdir: str
    replacements: dict[str, str]  # kernel name -> candidate source
    seeds: list[int] = field(default_factory=lambda: [101, 102, 103])
    precision: str = "strict"
    rho_max: float = 10.0
    deterministic: bool = True
    dtype: str = "fp32"
    device: str = "cuda"
    rounds: int = 5
    # a whole-graph candidate: the captured module of a rewritten graph (rewrite/stage.py) or of a compile
    # variant (compiled/variants.py) instead of the baseline's with kernels replaced; `candidate_what` names it
    candidate_dir: str | None = None
    candidate_what: str = "the rewritten graph"
    # {replacement: the op of the library call it replaces} and the math modes the baseline's calls ran under
    # (compiled.capture.library_math_modes): under `strict` a replacement may compute in its call's mode
    library_ops: dict[str, str] = field(default_factory=dict)
    library_modes: dict = field(default_factory=dict)


def candidate_context(ctx: ModelContext, req: StitchedRequest) -> ModelContext:
    """What runs the candidate: the baseline's capture (with `req.replacements`), or a rewritten graph's."""
    return ctx.candidate(req.candidate_dir) if req.candidate_dir else ctx


def gate3_stitched(req: StitchedRequest) -> GateResult:
    """Gate 3 in this process, through the same three steps the job runs in three children (pipeline/gates.py:
    gate3): eager's outputs, the candidate's, and the judge's comparison of the files they wrote. For tools
    and tests; a job never computes a verdict where candidate code runs."""
    import tempfile

    from kernelopt.verify.gate3_judge import JudgeRequest, judge_gate3
    from kernelopt.verify.model_outputs import OutputsRequest, candidate_outputs, reference_outputs

    ctx = ModelContext(req.problem_path, req.workdir, req.dtype, req.device)
    with tempfile.TemporaryDirectory(prefix="kernelopt-gate3-") as tmp:
        ref_dir, cand_dir = Path(tmp) / "reference", Path(tmp) / "candidate"
        out = OutputsRequest(req.problem_path, req.workdir, str(ref_dir), list(req.seeds), req.dtype, req.device)
        reference = reference_outputs(out)
        candidate = candidate_outputs(dataclasses.replace(out, out_dir=str(cand_dir), replacements=req.replacements,
                                                          candidate_dir=req.candidate_dir, float64=False))
        cand = candidate_context(ctx, req)
        judged = ({"the rewritten graph": Path(cand.captured.module_path).read_text()} if req.candidate_dir
                  else req.replacements)
        return judge_gate3(JudgeRequest(str(ref_dir), str(cand_dir), reference, candidate, list(req.seeds),
                                        req.precision, req.rho_max, req.dtype, judged,
                                        Path(ctx.captured.module_path).read_text(), req.library_ops,
                                        req.library_modes))
