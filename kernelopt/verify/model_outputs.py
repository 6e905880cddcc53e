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

import copy
import hashlib
import os
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path


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
    """Eager PyTorch on each seed's inputs: fp32 ("r32") and, for the fallback test, float64 ("r64")."""
    import torch

    from kernelopt.compiled.restitch import ModelContext
    from kernelopt.load.problem import output_leaves

    ctx = ModelContext(req.problem_path, req.workdir, req.dtype, req.device)
    out_dir = Path(req.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = OutputsManifest(OutputRole.REFERENCE.value)
    model = ctx.model
    model64 = copy.deepcopy(model).to(torch.float64) if req.float64 else None
    for seed in req.seeds:
        inputs = ctx.inputs(seed)
        with torch.no_grad():
            torch.manual_seed(seed)
            r32 = output_leaves(model(*inputs))
            manifest.files[file_key("r32", seed)] = _write(out_dir, file_key("r32", seed), r32)
            if model64 is not None:
                torch.manual_seed(seed)
                r64 = output_leaves(model64(*[x.to(torch.float64) if isinstance(x, torch.Tensor)
                                              and x.is_floating_point() else x for x in inputs]))
                manifest.files[file_key("r64", seed)] = _write(out_dir, file_key("r64", seed), r64)
    return manifest


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
