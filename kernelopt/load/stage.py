"""Stage 1 as a function: import the submission in this (child) process and check it."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kernelopt.load.problem import (
    ProblemError,
    build_model,
    dtype_from_name,
    import_problem,
    make_inputs,
    output_leaves,
    problem_kind,
    source_sha256,
)


@dataclass
class LoadRequest:
    problem_path: str
    dtype: str = "fp32"
    device: str = "cuda"
    weights: str | None = None  # safetensors file loaded into the model


@dataclass
class LoadResult:
    kind: str  # "model" | "kernel"
    name: str
    sha256: str
    input_shapes: list[list[int]]
    output_shapes: list[list[int]]
    deterministic: bool
    parameter_count: int = 0
    notes: list[str] = field(default_factory=list)


def import_model_file(path: str) -> None:
    """Import a model file and check its names, without building the model or its inputs.

    For a machine that cannot run the model (no GPU): a broken submission is still
    told so (ProblemError), and a valid one is not built only to be set aside.
    """
    mod = import_problem(Path(path))
    for name in ("Model", "get_inputs"):
        if getattr(mod, name, None) is None:
            raise ProblemError(f"{Path(path).name} has no `{name}`")


def load_problem(req: LoadRequest) -> LoadResult:
    """Import, build with seed 42, run twice; raise ProblemError with a clear message."""
    import torch

    path = Path(req.problem_path)
    kind = problem_kind(path)
    dtype = dtype_from_name(req.dtype)
    mod = import_problem(path)
    inputs = make_inputs(mod, seed=0, device=req.device, dtype=dtype)
    shapes_in = [list(x.shape) for x in inputs if isinstance(x, torch.Tensor)]
    notes: list[str] = []
    n_params = 0

    if kind == "model":
        model = build_model(mod, req.device, dtype, weights=req.weights)
        n_params = sum(p.numel() for p in model.parameters())
        run = lambda: model(*inputs)  # noqa: E731
    else:
        launch = mod.launch
        reference = mod.reference
        run = lambda: launch(*inputs)  # noqa: E731
        with torch.no_grad():
            ref_leaves = output_leaves(_call(reference, inputs, "reference"))

    with torch.no_grad():
        first = [t.clone() for t in output_leaves(_call(run, None, "forward"))]
        second = output_leaves(_call(run, None, "forward"))
    deterministic = len(first) == len(second) and all(
        a.shape == b.shape and torch.equal(a, b) for a, b in zip(first, second, strict=True)
    )
    if not deterministic:
        notes.append("output differs between two identical runs: verified with RNGs re-seeded before every run")
    if kind == "kernel":
        if [list(t.shape) for t in ref_leaves] != [list(t.shape) for t in first]:
            raise ProblemError(
                f"launch() returns shapes {[list(t.shape) for t in first]} but reference() "
                f"returns {[list(t.shape) for t in ref_leaves]}"
            )
    return LoadResult(
        kind=kind,
        name=path.stem,
        sha256=source_sha256(path),
        input_shapes=shapes_in,
        output_shapes=[list(t.shape) for t in first],
        deterministic=deterministic,
        parameter_count=n_params,
        notes=notes,
    )


def _call(fn, inputs, what: str):
    try:
        return fn(*inputs) if inputs is not None else fn()
    except ProblemError:
        raise
    except Exception as exc:
        raise ProblemError(f"{what} raised {type(exc).__name__}: {exc}") from exc
