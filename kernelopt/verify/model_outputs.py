"""Gate 3's raw material, each side computed in a process of its own (stage functions for children).

`reference_outputs` runs eager PyTorch on the real weights (fp32, and float64 for the fallback test);
`candidate_outputs` runs the re-stitched module (or a rewritten graph's). Neither decides anything: each
writes its output tensors to files in its own scratch directory and answers with a manifest of plain
data — file names, sizes and SHA-256 digests. The comparison runs in a third process that imports no
submitted or generated code (verify/gate3_judge.py), which loads only files whose digests match what
their writer answered. The reference's files lie where no candidate child can reach them (the job's
orchestrator gives the reference child a private scratch directory outside the job's work directory),
so a candidate can neither read the reference's outputs nor change them, and whatever it does to its
own process — patching `torch`, `pickle`, the comparison — happens where no verdict is computed.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernelopt.compiled.restitch import ModelContext


class OutputRole(str, Enum):
    REFERENCE = "reference"  # eager PyTorch, fp32 ("r32") and float64 ("r64")
    CANDIDATE = "candidate"  # the re-stitched module or rewritten graph ("o32")


@dataclass
class OutputFile:
    """One seed's output leaves, as written: `<kind>-<seed>.pt` (a list of CPU tensors, torch.save)."""

    name: str
    sha256: str
    nbytes: int


@dataclass
class OutputsManifest:
    role: str  # an OutputRole value
    files: dict[str, OutputFile] = field(default_factory=dict)  # "r32-101" -> its file
    # reference: why the float64 outputs could not be computed (then no "r64-*" file); None when they were
    float64_unavailable: str | None = None


FLOAT64_REASON_CHARS = 1000


@dataclass
class OutputsRequest:
    problem_path: str
    workdir: str  # the job's work directory: the capture (read only for the reference child)
    out_dir: str  # where this child writes its tensors (its scratch)
    seeds: list[int]
    dtype: str = "fp32"
    device: str = "cuda"
    replacements: dict[str, str] = field(default_factory=dict)  # candidate: kernel/group -> source
    candidate_dir: str | None = None  # candidate: a rewritten graph's capture instead of replacements
    float64: bool = True  # reference: the float64 eager outputs too


def file_key(kind: str, seed: int) -> str:
    return f"{kind}-{int(seed)}"


def _write(out_dir: Path, key: str, leaves: list) -> OutputFile:
    import io

    import torch

    buf = io.BytesIO()
    torch.save([t.detach().to("cpu") for t in leaves], buf)
    data = buf.getvalue()
    name = key + ".pt"
    fd = os.open(out_dir / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return OutputFile(name, hashlib.sha256(data).hexdigest(), len(data))


def reference_outputs(req: OutputsRequest) -> OutputsManifest:
    """Eager PyTorch on each seed's inputs: fp32 ("r32") and, for the fallback test, float64 ("r64").

    Every seed's fp32 outputs come first, from the model as built: nothing is cast before they are written.
    The float64 pass then casts that same model in place (this child's own), everything it reaches included
    (verify/float64_cast.py). Where that pass fails, the manifest says why (`float64_unavailable`) and holds
    no r64 file: the judge then decides without the fallback where it can, and calls it the harness's
    failure, not the candidate's, where it cannot."""
    import torch

    from kernelopt.compiled.restitch import ModelContext
    from kernelopt.load.problem import output_leaves

    ctx = ModelContext(req.problem_path, req.workdir, req.dtype, req.device)
    out_dir = Path(req.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = OutputsManifest(OutputRole.REFERENCE.value)
    model = ctx.model
    for seed in req.seeds:
        inputs = ctx.inputs(seed)
        with torch.no_grad():
            torch.manual_seed(seed)
            r32 = output_leaves(model(*inputs))
            manifest.files[file_key("r32", seed)] = _write(out_dir, file_key("r32", seed), r32)
    if req.float64:
        try:
            manifest.files.update(_float64_outputs(ctx, req.seeds, out_dir))
        except Exception as exc:  # the harness could not build or run it: said so, never taken for a verdict
            manifest.float64_unavailable = float64_failure(exc)
    return manifest


def _float64_outputs(ctx: ModelContext, seeds: list[int], out_dir: Path) -> dict[str, OutputFile]:
    """Every seed's r64 (all or none): the model cast to float64 in place, the default dtype float64, each
    seed's inputs drawn as for fp32 and their floating-point tensors cast, the RNG re-seeded as for fp32."""
    import torch

    from kernelopt.load.problem import output_leaves
    from kernelopt.verify.float64_cast import cast_float64, default_dtype, float64_inputs

    model64 = cast_float64(ctx.model)
    files = {}
    for seed in seeds:
        inputs = float64_inputs(ctx.inputs(seed))
        with torch.no_grad(), default_dtype(torch.float64):
            torch.manual_seed(seed)
            r64 = output_leaves(model64(*inputs))
        files[file_key("r64", seed)] = _write(out_dir, file_key("r64", seed), r64)
    return files


def float64_failure(exc: BaseException) -> str:
    """Why a float64 pass failed, for the manifest: the exception and the line of code that raised it."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({Path(frames[-1].filename).name}:{frames[-1].lineno}, in {frames[-1].name})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"[:FLOAT64_REASON_CHARS]


def candidate_outputs(req: OutputsRequest) -> OutputsManifest:
    """The candidate (re-stitched module, or a rewritten graph's) on each seed's inputs ("o32")."""
    import torch

    from kernelopt.compiled.restitch import ModelContext

    ctx = ModelContext(req.problem_path, req.workdir, req.dtype, req.device)
    cand = ctx.candidate(req.candidate_dir) if req.candidate_dir else ctx
    mod = cand.module(req.replacements)
    out_dir = Path(req.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = OutputsManifest(OutputRole.CANDIDATE.value)
    for seed in req.seeds:
        inputs = ctx.inputs(seed)
        with torch.no_grad():
            torch.manual_seed(seed)
            o32 = cand.run(mod, inputs)
        manifest.files[file_key("o32", seed)] = _write(out_dir, file_key("o32", seed), o32)
    return manifest
