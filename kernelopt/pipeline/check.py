"""`kernelopt check`: an independent re-check of a deployed result on 5 fresh seeds.

Loads `optimized_module.py` as a user would (its `ModelNew`), builds `Model`
and `ModelNew` from the same seed, and compares them with Gate 3's rule on
seeds the job never saw, in the job's dtype (models and inputs cast as the job
cast them: load.problem) with that dtype's tolerance. Runs in a child process.
"""
from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelopt.core.precision import PrecisionPolicy
from kernelopt.core.text import clip
from kernelopt.core.tolerance import Dtype
from kernelopt.isolation import ChildError, run_in_child
from kernelopt.load.problem import (
    MODEL_SEED,
    ProblemError,
    build_model,
    dtype_from_name,
    import_problem,
    make_inputs,
    output_leaves,
    parse_python,
    problem_kind,
)
from kernelopt.pipeline.device import probe_device
from kernelopt.pipeline.errors import InputError, require_file
from kernelopt.verify.interpreter import InterpreterProbe, interpreter_cannot_run

CHECK_SEEDS = [7001, 7002, 7003, 7004, 7005]


@dataclass
class CheckRequest:
    optimized_path: str
    problem_path: str
    precision: str = "strict"
    seeds: list[int] = field(default_factory=lambda: list(CHECK_SEEDS))
    dtype: str = "fp32"  # a core.tolerance.Dtype value: the dtype the job ran in
    weights: str | None = None  # the job's weights (safetensors), when it had any


class CheckError(InputError):
    """The check could not compare: the files do not go together, or one does not run.

    Raised by run_check (in the caller's process) with one line for the user; the
    check did not pass, so `kernelopt check` exits 1 as for a failed check.
    """

    exit_code = 1


class _CannotCompare(Exception):
    """Child side: why the comparison could not be made (returned as data, not a traceback)."""


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {clip(text[0], 300) if text else ''}".rstrip(": ")


def _check(req: CheckRequest) -> dict:
    """Child: the comparison, or {"error": one line} when it cannot be made."""
    try:
        return _compare(req)
    except _CannotCompare as exc:
        return {"passed": False, "error": str(exc)}


def _compare(req: CheckRequest) -> dict:
    import torch

    # Child side: Gate 3 imports torch, which the check's own process (the CLI's) never needs.
    from kernelopt.verify.float64_cast import cast_float64, default_dtype, float64_inputs
    from kernelopt.verify.gate3_model import check_model

    opt_name, prob_name = Path(req.optimized_path).name, Path(req.problem_path).name
    dtype = dtype_from_name(req.dtype)
    try:
        kind = problem_kind(req.problem_path)
        problem = import_problem(req.problem_path, "kernelopt_check_problem")
    except ProblemError as exc:
        raise _CannotCompare(f"problem file {prob_name}: {exc}") from None
    try:
        optimized = import_problem(req.optimized_path, "kernelopt_check_optimized")
    except ProblemError as exc:
        raise _CannotCompare(f"optimized module {opt_name}: {exc}") from None
    device = "cuda" if torch.cuda.is_available() else "cpu"
    per_seed: list[dict[str, Any]] = []
    if kind == "model":
        if not isinstance(getattr(optimized, "ModelNew", None), type):
            raise _CannotCompare(f"{opt_name} has no class ModelNew: it is not the optimized module of a model "
                                 f"(and {prob_name} is a model file)")
        try:
            model = build_model(problem, device, dtype, weights=req.weights)
        except ProblemError as exc:
            raise _CannotCompare(f"problem file {prob_name}: {exc}") from None
        torch.manual_seed(MODEL_SEED)
        try:
            new = optimized.ModelNew(*getattr(problem, "get_init_inputs", lambda: [])()).to(device=device,
                                                                                          dtype=dtype)
            new.load_state_dict(model.state_dict())
        except Exception as exc:
            raise _CannotCompare(f"{opt_name} does not belong to {prob_name}: its ModelNew cannot take the "
                                 f"problem's Model parameters ({_one_line(exc)})") from None
        run_ref = lambda xs: output_leaves(model(*xs))  # noqa: E731
        run_new = lambda xs: output_leaves(new(*xs))  # noqa: E731
        built64: list[torch.nn.Module] = []

        def run_64(xs: list, seed: int) -> list:
            # Gate 3's float64 reference as the job's reference child makes it (verify/float64_cast.py): a model
            # of its own, built as `model` was, with everything it reaches cast (a deepcopy's `.double()` left
            # minGPT's lambda calling the float32 modules: the check of an H100 result raised on that); the
            # default dtype float64, the RNG seeded as for the seed's fp32 calls
            if not built64:
                built64.append(cast_float64(build_model(problem, device, dtype, weights=req.weights)))
            with default_dtype(torch.float64):
                torch.manual_seed(seed)
                return output_leaves(built64[0](*xs))
    else:
        if not callable(getattr(optimized, "launch", None)):
            raise _CannotCompare(f"{opt_name} has no launch(): it is not the optimized module of a kernel file "
                                 f"(and {prob_name} is a kernel file)")
        if device == "cpu":  # the Triton interpreter: it may not compute faithfully in this dtype
            why = interpreter_cannot_run(InterpreterProbe(req.problem_path, req.dtype))
            if why:
                raise _CannotCompare(f"cannot check {prob_name}'s kernel here: {why}")
        run_ref = lambda xs: output_leaves(problem.reference(*xs))  # noqa: E731
        run_new = lambda xs: output_leaves(optimized.launch(*xs))  # noqa: E731
        run_64 = lambda xs, seed: run_ref(xs)  # noqa: E731 - the file's PyTorch reference, on float64 inputs
    for seed in req.seeds:
        try:
            xs = make_inputs(problem, seed, device, dtype)
        except ProblemError as exc:
            raise _CannotCompare(f"problem file {prob_name}: {exc}") from None
        x64 = float64_inputs(xs)
        with torch.no_grad():
            torch.manual_seed(seed)
            try:
                r32 = [t.clone() for t in run_ref(xs)]
            except Exception as exc:
                raise _CannotCompare(f"problem file {prob_name}: its reference raised {_one_line(exc)}") from None
            torch.manual_seed(seed)
            try:
                o32 = run_new(xs)
            except Exception as exc:  # nothing to compare: another problem's module, or a broken one
                raise _CannotCompare(f"{opt_name} does not run on {prob_name}'s inputs (seed {seed}): "
                                     f"{_one_line(exc)}") from None
            result = check_model(r32, o32, functools.partial(run_64, x64, seed), req.precision, dtype=req.dtype)
        per_seed.append({"seed": seed, "passed": result.passed, "message": result.message,
                         "metrics": {k: v for k, v in result.metrics.items() if isinstance(v, (int, float, str, bool))
                                     or v is None}})
    passed = all(s["passed"] for s in per_seed)
    return {"passed": passed, "seeds": per_seed, "precision": req.precision, "dtype": req.dtype,
            "summary": f"{'PASS' if passed else 'FAIL'}: {sum(s['passed'] for s in per_seed)}/{len(per_seed)} "
                       f"fresh seeds pass Gate 3 ({req.precision}, {req.dtype})"
                       + "".join(f"\n  seed {s['seed']}: {s['message']}" for s in per_seed if not s["passed"])}


def run_check(req: CheckRequest, timeout_s: float = 900.0) -> dict:
    """The check's result: {"passed", "seeds", "precision", "summary"}.

    Raises InputError (a missing file, a file that is not Python or not a problem)
    or CheckError (the files do not belong together; the check could not run),
    each with one line for the user, before or instead of a result.
    """
    try:
        req = dataclasses.replace(req, dtype=Dtype.parse(req.dtype).value,
                                  precision=PrecisionPolicy.parse(req.precision).value)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    require_file(req.optimized_path, "optimized module")
    require_file(req.problem_path, "problem file")
    if req.weights is not None:
        require_file(req.weights, "weights file")
    try:  # parsed here, run only in the child
        problem_kind(req.problem_path)
        parse_python(req.optimized_path)
    except ProblemError as exc:
        raise InputError(str(exc)) from None
    env = None
    try:  # probed in a child: this process never initialises CUDA
        if not probe_device().cuda:
            env = {"TRITON_INTERPRET": "1"}
    except ChildError:
        pass
    # The child starts in a scratch directory of its own: it is given absolute paths.
    req = dataclasses.replace(req, optimized_path=os.path.abspath(req.optimized_path),
                              problem_path=os.path.abspath(req.problem_path),
                              weights=os.path.abspath(req.weights) if req.weights else None)
    try:
        result = run_in_child(_check, req, timeout_s=timeout_s, env=env,
                              read_only=[p for p in (req.optimized_path, req.problem_path, req.weights) if p])
    except ChildError as exc:
        kind = getattr(exc.kind, "value", exc.kind)
        first = clip((exc.message.splitlines() or [""])[0], 300)
        raise CheckError(f"the check could not run: {kind}: {first}") from None
    if "error" in result:
        raise CheckError(result["error"])
    return result
