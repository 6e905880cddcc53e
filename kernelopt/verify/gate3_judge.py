"""Gate 3's verdict, computed where no submitted or generated code runs (a stage function for a child).

The judge is started fresh for each verdict and imports only KernelOPT's verification code and torch.
It reads the tensors the reference child and the candidate child wrote (verify/model_outputs.py) —
files opened without following links, each checked against the SHA-256 its writer answered with, loaded
with `torch.load(weights_only=True)` (tensors and containers only) — and applies the precision contract
(verify/precision.strict_verdict) and the comparison (verify/gate3_model.check_model). Its GateResult is
the only Gate 3 verdict the job believes.
"""
from __future__ import annotations

import hashlib
import io
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from kernelopt.verify.model_outputs import FLOAT64_REASON_CHARS, OutputsManifest, file_key
from kernelopt.verify.result import GateResult

GATE: Final = "gate3"


@dataclass
class JudgeRequest:
    reference_dir: str
    candidate_dir: str
    reference: OutputsManifest
    candidate: OutputsManifest
    seeds: list[int]
    precision: str = "strict"
    rho_max: float = 10.0
    dtype: str = "fp32"
    # the strict verdict's inputs: the sources judged, the baseline module's source, the calls they replace
    judged: dict[str, str] = field(default_factory=dict)
    baseline_source: str = ""
    library_ops: dict[str, str] = field(default_factory=dict)
    library_modes: dict = field(default_factory=dict)


class TamperedOutputs(Exception):
    """An output file that is not what its writer answered it wrote (changed, replaced, or a link)."""


def _load(directory: str, manifest: OutputsManifest, key: str, device: str) -> list:
    import torch

    entry = manifest.files.get(key)
    if entry is None:
        raise TamperedOutputs(f"the {manifest.role} child wrote no {key}")
    if "/" in entry.name or entry.name.startswith("."):
        raise TamperedOutputs(f"the {manifest.role} child named a file outside its directory: {entry.name!r}")
    try:
        fd = os.open(Path(directory) / entry.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO: no wait
    except OSError as exc:
        raise TamperedOutputs(f"{manifest.role} output {entry.name} cannot be opened as a file: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size != entry.nbytes:  # before reading: not what was answered
            raise TamperedOutputs(f"{manifest.role} output {entry.name} changed after its child wrote it")
        data = f.read(entry.nbytes + 1)
    if len(data) != entry.nbytes or hashlib.sha256(data).hexdigest() != entry.sha256:
        raise TamperedOutputs(f"{manifest.role} output {entry.name} changed after its child wrote it")
    leaves = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    if not isinstance(leaves, list) or not all(isinstance(t, torch.Tensor) for t in leaves):
        raise TamperedOutputs(f"{manifest.role} output {entry.name} is not a list of tensors")
    return [t.to(device) for t in leaves]


def judge_gate3(req: JudgeRequest) -> GateResult:
    import torch

    from kernelopt.core.precision import PrecisionPolicy
    from kernelopt.verify.gate3_model import check_model
    from kernelopt.verify.precision import strict_verdict

    emulated: dict[str, str] = {}
    if PrecisionPolicy.parse(req.precision) is PrecisionPolicy.STRICT:
        reason, emulated = strict_verdict(req.judged, req.baseline_source, req.dtype,
                                          library_ops=req.library_ops, modes=req.library_modes)
        if reason:
            return GateResult.fail(GATE, reason, policy="strict", branch="reduced-precision", rho=None)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    # the reference child's word that its float64 pass failed (a harness failure, not the candidate's)
    reason = req.reference.float64_unavailable
    unavailable = str(reason)[:FLOAT64_REASON_CHARS] if reason is not None else None
    worst: GateResult | None = None
    rhos = []
    for seed in req.seeds:
        try:
            r32 = _load(req.reference_dir, req.reference, file_key("r32", seed), device)
            o32 = _load(req.candidate_dir, req.candidate, file_key("o32", seed), device)
            has64 = file_key("r64", seed) in req.reference.files
            r64 = _load(req.reference_dir, req.reference, file_key("r64", seed), device) if has64 else None
        except TamperedOutputs as exc:
            return GateResult.fail(GATE, f"seed {seed}: {exc}", branch="outputs", rho=None, seed=seed)
        result = check_model(r32, o32, r64, req.precision, rho_max=req.rho_max, require_float64=bool(emulated),
                             dtype=req.dtype, float64_unavailable=None if has64 else unavailable)
        result.metrics["seed"] = seed
        if emulated:
            result.metrics["emulation"] = dict(emulated)
        if result.metrics.get("rho") is not None:
            rhos.append(result.metrics["rho"])
        if not result.passed:
            return result
        worst = result if worst is None or _rho(result) >= _rho(worst) else worst
    if worst is None:
        return GateResult.fail(GATE, "no seeds to verify", rho=None)
    worst.metrics["rho_max_over_seeds"] = max(rhos) if rhos else None
    worst.metrics["seeds"] = list(req.seeds)
    worst.metrics["judged_apart"] = True  # outputs from two processes, compared in a third
    return worst


def _rho(r: GateResult) -> float:
    v = r.metrics.get("rho")
    return -1.0 if v is None else float(v)
