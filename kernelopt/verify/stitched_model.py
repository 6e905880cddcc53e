"""Gates 3 and 4 on a re-stitched model, as child-process stage functions.

Gate 3 compares the re-stitched module against eager PyTorch on the real
weights for fresh input seeds (float64 fallback in verify.gate3_model); Gate 4
times baseline and re-stitched module side by side in one fresh process.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

from kernelopt.compiled import runtime
from kernelopt.compiled.restitch import ModelContext
from kernelopt.core.precision import PrecisionPolicy
from kernelopt.core.timing import Timing, bench_interleaved
from kernelopt.load.problem import output_leaves
from kernelopt.verify.gate3_model import check_model
from kernelopt.verify.precision import strict_verdict
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
    # a whole-graph candidate: the captured module of a rewritten graph (rewrite/stage.py) instead of the
    # baseline's with kernels replaced
    candidate_dir: str | None = None
    # {replacement: the op of the library call it replaces} and the math modes the baseline's calls ran under
    # (compiled.capture.library_math_modes): under `strict` a replacement may compute in its call's mode
    library_ops: dict[str, str] = field(default_factory=dict)
    library_modes: dict = field(default_factory=dict)


def candidate_context(ctx: ModelContext, req: StitchedRequest) -> ModelContext:
    """What runs the candidate: the baseline's capture (with `req.replacements`), or a rewritten graph's."""
    return ctx.candidate(req.candidate_dir) if req.candidate_dir else ctx


def gate3_stitched(req: StitchedRequest) -> GateResult:
    import torch

    ctx = ModelContext(req.problem_path, req.workdir, req.dtype, req.device)
    cand = candidate_context(ctx, req)
    emulated: dict[str, str] = {}
    if PrecisionPolicy.parse(req.precision) is PrecisionPolicy.STRICT:
        # a rewritten graph is judged as one replacement: Inductor's module for it against the baseline's
        judged = ({"the rewritten graph": Path(cand.captured.module_path).read_text()} if req.candidate_dir
                  else req.replacements)
        reason, emulated = strict_verdict(judged, Path(ctx.captured.module_path).read_text(), req.dtype,
                                          library_ops=req.library_ops, modes=req.library_modes)
        if reason:
            return GateResult.fail("gate3", reason, policy="strict", branch="reduced-precision", rho=None)
    mod = cand.module(req.replacements)
    model = ctx.model
    worst: GateResult | None = None
    rhos = []
    for seed in req.seeds:
        inputs = ctx.inputs(seed)
        with torch.no_grad():
            torch.manual_seed(seed)
            r32 = _leaves(model(*inputs))
            torch.manual_seed(seed)
            o32 = cand.run(mod, inputs)

        def r64(inputs=inputs, seed=seed):
            model64 = copy.deepcopy(model).to(torch.float64)
            with torch.no_grad():
                torch.manual_seed(seed)
                return _leaves(model64(*[x.to(torch.float64) if isinstance(x, torch.Tensor)
                                         and x.is_floating_point() else x for x in inputs]))

        result = check_model(r32, o32, r64, req.precision, rho_max=req.rho_max, require_float64=bool(emulated),
                             dtype=req.dtype)
        result.metrics["seed"] = seed
        if emulated:
            result.metrics["emulation"] = dict(emulated)
        if result.metrics.get("rho") is not None:
            rhos.append(result.metrics["rho"])
        if not result.passed:
            return result
        worst = result if worst is None or _rho(result) >= _rho(worst) else worst
    assert worst is not None, "no seeds to verify"  # every seed sets it or returns
    worst.metrics["rho_max_over_seeds"] = max(rhos) if rhos else None
    worst.metrics["seeds"] = list(req.seeds)
    return worst


def _rho(r: GateResult) -> float:
    v = r.metrics.get("rho")
    return -1.0 if v is None else float(v)


def _leaves(out) -> list:
    return output_leaves(out)


def time_stitched(req: StitchedRequest) -> Timing:
    """Baseline and re-stitched module, interleaved do_bench rounds, in this fresh process."""
    ctx = ModelContext(req.problem_path, req.workdir, req.dtype, req.device)
    cctx = candidate_context(ctx, req)
    inputs = ctx.inputs(0)
    args = ctx.flat_args(inputs)
    cargs = cctx.flat_args(inputs) if cctx is not ctx else args
    base = ctx.module()
    cand = cctx.module(req.replacements)
    return bench_interleaved(
        {"baseline": lambda: runtime.call_module(base, args),
         "candidate": lambda: runtime.call_module(cand, cargs)},
        rounds=req.rounds,
    )
