"""The rewrite stage: the model's ATen graph rewritten by the catalogue, compiled by Inductor, captured.

It runs in a child (it executes the submission): the model is traced again exactly as the capture stage
traced it, the catalogue rewrites the graph Inductor receives, and — when an identity applied and the work
went down — Inductor compiles the rewritten graph and the capture records its output module in
`<workdir>/graph_rewrite/`, a whole-model candidate with the same flat arguments as the baseline (the
parameters stay graph inputs, so the weights it derives follow a loaded state dict). When nothing applies
the stage stops before compiling anything.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from kernelopt.compiled.capture import CaptureRequest, TransformStopped, capture_model
from kernelopt.compiled.graph import ArgSpec, CapturedGraph, Reproduction
from kernelopt.rewrite.graph_rewrite import Dependence, GraphRewrite, rewrite_graph

REWRITE_DIR = "graph_rewrite"
# A rewrite is worth a candidate (a compile and the gates) when it removes this share of the graph's FLOPs or
# of its materialized bytes; a rewrite that only drops a size-1 reduction is not.
MIN_SAVING = 0.10


@dataclass
class RewriteRequest:
    problem_path: str
    workdir: str  # the job's; the baseline's capture is there
    dtype: str = "fp32"
    device: str = "cuda"
    weights: str | None = None


@dataclass
class RewriteResult:
    applied: list[dict] = field(default_factory=list)  # AppliedRewrite as dicts, in order
    flops_before: int = 0
    flops_after: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    findings: list[str] = field(default_factory=list)  # what the identities proved about the model, in words
    candidate_dir: Optional[str] = None  # the rewritten model's capture, when it is a candidate
    note: str = ""  # one line: what happened
    errors: list[str] = field(default_factory=list)
    compile_seconds: float = 0.0


def rewrite_model(req: RewriteRequest) -> RewriteResult:
    base = CapturedGraph.load(req.workdir)
    found: dict[str, GraphRewrite] = {}

    def transform(gm) -> None:
        r = rewrite_graph(gm)
        found["graph"] = r
        if not r.applied or not worth_a_candidate(r):
            raise TransformStopped(r)

    out = Path(req.workdir) / REWRITE_DIR
    try:
        cg = capture_model(CaptureRequest(req.problem_path, str(out), req.dtype, req.device, weights=req.weights,
                                          context_timing=False), transform=transform)
    except TransformStopped as stop:
        r = stop.payload
        assert isinstance(r, GraphRewrite)
        result = _result(r, base.args)
        result.note = ("no identity of the catalogue applies to this graph" if not r.applied else
                       f"{len(r.applied)} rewrite(s) apply but remove less than {MIN_SAVING:.0%} of the graph's "
                       "FLOPs and bytes: no candidate")
        return result
    r = found["graph"]
    result = _result(r, base.args)
    result.compile_seconds = cg.compile_seconds
    if cg.reproduction == Reproduction.NO.value:
        result.note = ("Gate 1: the rewritten graph's module did not reproduce its own compiled output when "
                       "re-executed: no candidate")
        return result
    if _signature(cg.args) != _signature(base.args):
        result.note = "the rewritten graph takes other arguments than the baseline's: no candidate"
        return result
    result.candidate_dir = str(out)
    result.note = (f"{len(r.applied)} rewrite(s): matmul/conv GFLOP {_g(result.flops_before)} -> "
                   f"{_g(result.flops_after)}, "
                   f"MB materialized before fusion {result.bytes_before / 1e6:.1f} -> {result.bytes_after / 1e6:.1f}")
    return result


def worth_a_candidate(r: GraphRewrite) -> bool:
    if r.before is None or r.after is None:
        return False
    return (r.after.flops <= (1 - MIN_SAVING) * r.before.flops
            or r.after.bytes <= (1 - MIN_SAVING) * r.before.bytes)


def findings(dependence: dict[int, str], args: list[ArgSpec]) -> list[str]:
    """What the identities proved about the model, in plain words (a model like that is usually a bug).

    Inputs and parameters only: a buffer the outputs do not read (a training BatchNorm's running statistics,
    which it updates) says nothing about the model's output.
    """
    def named(dep: str) -> list[str]:
        return [f"input {args[i].ref} of get_inputs()" if args[i].kind == "input" else f"parameter `{args[i].ref}`"
                for i, d in sorted(dependence.items())
                if d == dep and i < len(args) and args[i].kind in ("input", "param")]
    out = []
    unused = named(Dependence.NONE)
    if unused:
        out.append(f"the output does not depend on {', '.join(unused)}: any values give the same result "
                   "(a model like this is usually a bug)")
    finite = named(Dependence.FINITE_ONLY)
    if finite:
        out.append(f"the output depends on {', '.join(finite)} only through whether the values are finite: for "
                   "finite values it is constant (a softmax or normalization over a dimension of size 1 does "
                   "this; a model like this is usually a bug)")
    return out


def _result(r: GraphRewrite, args: list[ArgSpec]) -> RewriteResult:
    return RewriteResult(
        applied=[a.__dict__ for a in r.applied],
        flops_before=r.before.flops if r.before else 0, flops_after=r.after.flops if r.after else 0,
        bytes_before=r.before.bytes if r.before else 0, bytes_after=r.after.bytes if r.after else 0,
        findings=findings(r.dependence, args), errors=list(r.errors))


def _signature(args: list[ArgSpec]) -> list[tuple]:
    return [(a.kind, a.ref, tuple(a.shape), a.dtype) for a in args if a.kind != "const"]


def _g(flops: int) -> str:
    return f"{flops / 1e9:.3g}"
