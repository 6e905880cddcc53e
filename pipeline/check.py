"""`kernelopt check`: an independent re-check of a deployed result on 5 fresh seeds.

Loads `optimized_module.py` as a user would (its `ModelNew`), builds `Model`
and `ModelNew` from the same seed, and compares them with Gate 3's rule on
seeds the job never saw. Runs in a child process.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

from isolation import ChildError, run_in_child

CHECK_SEEDS = [7001, 7002, 7003, 7004, 7005]


@dataclass
class CheckRequest:
    optimized_path: str
    problem_path: str
    precision: str = "strict"
    seeds: list[int] = field(default_factory=lambda: list(CHECK_SEEDS))
    dtype: str = "fp32"
    weights: str | None = None  # the job's weights (safetensors), when it had any


def _check(req: CheckRequest) -> dict:
    import copy

    import torch

    from load.problem import MODEL_SEED, build_model, dtype_from_name, import_problem, make_inputs, output_leaves
    from load.problem import problem_kind
    from verify.gate3_model import check_model

    dtype = dtype_from_name(req.dtype)
    kind = problem_kind(req.problem_path)
    problem = import_problem(req.problem_path, "kernelopt_check_problem")
    optimized = import_problem(req.optimized_path, "kernelopt_check_optimized")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    per_seed = []
    if kind == "model":
        model = build_model(problem, device, dtype, weights=req.weights)
        torch.manual_seed(MODEL_SEED)
        new = optimized.ModelNew(*getattr(problem, "get_init_inputs", lambda: [])()).to(device=device, dtype=dtype)
        new.load_state_dict(model.state_dict())
        run_ref = lambda xs: output_leaves(model(*xs))  # noqa: E731
        run_new = lambda xs: output_leaves(new(*xs))  # noqa: E731
        run_64 = lambda xs: output_leaves(copy.deepcopy(model).double()(*xs))  # noqa: E731
    else:
        run_ref = lambda xs: output_leaves(problem.reference(*xs))  # noqa: E731
        run_new = lambda xs: output_leaves(optimized.launch(*xs))  # noqa: E731
        run_64 = run_ref
    for seed in req.seeds:
        xs = make_inputs(problem, seed, device, dtype)
        x64 = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in xs]
        with torch.no_grad():
            torch.manual_seed(seed)
            r32 = [t.clone() for t in run_ref(xs)]
            torch.manual_seed(seed)
            o32 = run_new(xs)
            result = check_model(r32, o32, lambda: run_64(x64), req.precision)
        per_seed.append({"seed": seed, "passed": result.passed, "message": result.message,
                         "metrics": {k: v for k, v in result.metrics.items() if isinstance(v, (int, float, str, bool))
                                     or v is None}})
    passed = all(s["passed"] for s in per_seed)
    return {"passed": passed, "seeds": per_seed, "precision": req.precision,
            "summary": f"{'PASS' if passed else 'FAIL'}: {sum(s['passed'] for s in per_seed)}/{len(per_seed)} "
                       f"fresh seeds pass Gate 3 ({req.precision})"
                       + "".join(f"\n  seed {s['seed']}: {s['message']}" for s in per_seed if not s["passed"])}


def run_check(req: CheckRequest, timeout_s: float = 900.0) -> dict:
    from pipeline.device import probe_device

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
        return run_in_child(_check, req, timeout_s=timeout_s, env=env,
                            read_only=[p for p in (req.optimized_path, req.problem_path, req.weights) if p])
    except ChildError as exc:
        return {"passed": False, "seeds": [], "precision": req.precision,
                "summary": f"FAIL: the check could not run: {exc}\n{exc.traceback[-1500:]}"}
