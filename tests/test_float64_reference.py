"""Gate 3's float64 reference on any model (issue 37, item 2), in real children.

`deepcopy(model).to(torch.float64)` missed what Python code reaches outside the module tree: minGPT's MLP behind
a lambda's closure (the float64 copy called the float32 modules: "mat1 and mat2 must have the same dtype"), a
module in a plain list, a plain-attribute tensor, a tensor a forward makes with the default dtype. The reference
child now casts everything the model reaches (verify/float64_cast.py). Where the float64 pass still fails, the
job says the harness failed (cause `harness-error`), never that the candidates are wrong.
"""
from __future__ import annotations

import collections
import copy
import functools
from pathlib import Path

import pytest
import torch

from kernelopt.core.outcome import Cause, Outcome
from kernelopt.isolation import run_in_child
from kernelopt.load.problem import build_model, import_problem, make_inputs
from kernelopt.verify.float64_cast import cast_float64, default_dtype
from kernelopt.verify.gate3_judge import JudgeRequest, judge_gate3
from kernelopt.verify.model_outputs import OutputRole, OutputsManifest, OutputsRequest, _write, reference_outputs

PROBLEMS = Path(__file__).parent / "testdata" / "problems"
MINGPT = PROBLEMS / "mingpt_mlp_closures.py"
FLOAT32_ONLY = PROBLEMS / "float32_only.py"
SEEDS = [101, 102]

GLOBAL_SCALE = torch.full((4,), 2.0)  # a tensor of this module's: the cast must leave it as it is
Pair = collections.namedtuple("Pair", "a b")


class _Holder:
    """An object of the model's own class, holding a tensor and a module that nothing registers."""

    def __init__(self) -> None:
        self.offset = torch.ones(4)
        self.lin = torch.nn.Linear(4, 4)

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) + self.offset


class _Reaching(torch.nn.Module):
    """Every path by which a forward reaches a module or tensor outside the registered tree."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        hidden = torch.nn.Linear(4, 4)
        bias = torch.full((4,), 0.5)

        def nested(x: torch.Tensor) -> torch.Tensor:  # a closure over an unregistered module and a tensor
            return hidden(x) + bias

        self.nested = nested
        w0, k0 = torch.full((4,), 3.0), torch.full((4,), 4.0)
        self.defaults = lambda x, w=w0, *, k=k0: x * w + k  # tensors only its default arguments hold
        self.partial = functools.partial(torch.add, other=torch.full((4,), 1.0))
        self.holder = _Holder()
        self.method = self.holder.apply  # a bound method: its instance
        self.containers = {"pair": Pair(torch.eye(4), [torch.nn.Linear(4, 4)]), "t": (torch.zeros(4), 3)}
        self.alias = [self.fc.weight, GLOBAL_SCALE, GLOBAL_SCALE]  # a Parameter, and one tensor twice
        self.mul = torch.full((4,), 0.25).mul  # a tensor's builtin method
        self.steps = torch.arange(4)  # an integer tensor: not cast
        self.act = torch.nn.functional.gelu  # torch's own function: not walked

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pair = self.containers["pair"]
        y = self.fc(x) + self.nested(x) + self.defaults(x) + self.partial(x) + self.method(x)
        y = pair.b[0](y @ pair.a) + self.containers["t"][0] + self.alias[1] * self.alias[2]
        return self.act(self.mul(y) + self.steps)


def _floating(obj: torch.nn.Module) -> list[torch.Tensor]:
    return [t for t in [*obj.parameters(), *obj.buffers()] if t.is_floating_point()]


def test_the_cast_reaches_every_path_and_leaves_the_rest_alone():
    model = _Reaching()
    x = torch.randn(3, 4)
    with torch.no_grad():
        y32 = model(x)
    weight = model.fc.weight
    cast_float64(model)
    c = model.containers
    reached = [*_floating(model), *_floating(model.holder.lin), *_floating(c["pair"].b[0]), model.holder.offset,
               c["pair"].a, c["t"][0], model.partial.keywords["other"], model.defaults.__defaults__[0],
               model.defaults.__kwdefaults__["k"], model.mul.__self__, model.alias[1]]
    cells = [cell.cell_contents for cell in model.nested.__closure__]
    reached += [t for obj in cells for t in (_floating(obj) if isinstance(obj, torch.nn.Module) else [obj])]
    assert all(t.dtype == torch.float64 for t in reached), [t.dtype for t in reached]
    assert isinstance(c["pair"], Pair) and c["t"][1] == 3
    assert model.alias[0] is weight and model.alias[1] is model.alias[2]  # a Parameter stays itself; aliases stay
    assert GLOBAL_SCALE.dtype == torch.float32 and model.steps.dtype == torch.int64
    assert model.act is torch.nn.functional.gelu
    with torch.no_grad(), default_dtype(torch.float64):
        y64 = model(x.double())
    assert torch.get_default_dtype() == torch.float32  # restored
    assert y64.dtype == torch.float64 and torch.allclose(y64, y32.double(), atol=1e-5)


def test_the_mingpt_mlp_is_what_a_deepcopy_cannot_cast():
    problem = import_problem(MINGPT)
    model = build_model(problem, "cpu", torch.float32)
    (x,) = make_inputs(problem, SEEDS[0], "cpu", torch.float32)
    with pytest.raises(RuntimeError, match="same dtype"):  # the old reference: the closure's modules stay fp32
        copy.deepcopy(model).to(torch.float64)(x.double())
    cast_float64(model)
    with pytest.raises(RuntimeError, match="same dtype"):  # its forward's torch.ones(C, C): the default dtype's
        model(x.double())
    with torch.no_grad(), default_dtype(torch.float64):
        assert model(x.double()).dtype == torch.float64


def _reference(problem: Path, tmp_path: Path, name: str, float64: bool = True) -> tuple[OutputsManifest, Path]:
    """Gate 3's reference child, as a job runs it (pipeline/gates.py): its own scratch, the problem read-only."""
    out, workdir = tmp_path / name, tmp_path / f"{name}-work"  # no capture is needed for eager outputs
    out.mkdir()
    workdir.mkdir()
    req = OutputsRequest(str(problem), str(workdir), str(out), SEEDS, device="cpu", float64=float64)
    manifest = run_in_child(reference_outputs, req, timeout_s=300, scratch=out, read_only=[str(problem), str(workdir)])
    assert isinstance(manifest, OutputsManifest) and manifest.role == OutputRole.REFERENCE.value
    return manifest, out


def _leaves(directory: Path, manifest: OutputsManifest, key: str) -> list[torch.Tensor]:
    return torch.load(directory / manifest.files[key].name, weights_only=True)


def test_the_mingpt_reference_runs_in_float64_and_leaves_fp32_as_it_was(tmp_path):
    manifest, out = _reference(MINGPT, tmp_path, "ref")
    assert manifest.float64_unavailable is None
    assert sorted(manifest.files) == sorted(f"{k}-{s}" for k in ("r32", "r64") for s in SEEDS)
    for seed in SEEDS:
        (r32,), (r64,) = _leaves(out, manifest, f"r32-{seed}"), _leaves(out, manifest, f"r64-{seed}")
        assert r32.dtype == torch.float32 and r64.dtype == torch.float64
        d_ref = (r64 - r32.double()).abs().max().item()
        assert 0 < d_ref < 1e-5  # float64's own rounding, not fp32's: close, and not equal
    # eager fp32 is computed before anything is cast: the same bytes as a reference without the float64 pass
    fp32_only, _ = _reference(MINGPT, tmp_path, "ref32", float64=False)
    assert {k: f.sha256 for k, f in manifest.files.items() if k.startswith("r32")} == {
        k: f.sha256 for k, f in fp32_only.files.items()}


def _judge(ref: OutputsManifest, ref_dir: Path, o32: list[torch.Tensor], tmp_path: Path, seed: int, **kw):
    cand_dir = tmp_path / f"cand-{len(list(tmp_path.glob('cand-*')))}"
    cand_dir.mkdir()
    cand = OutputsManifest(OutputRole.CANDIDATE.value, {f"o32-{seed}": _write(cand_dir, f"o32-{seed}", o32)})
    return judge_gate3(JudgeRequest(str(ref_dir), str(cand_dir), ref, cand, [seed], **kw))


def test_a_float64_pass_that_raises_is_the_harness_failing_not_the_candidate(tmp_path):
    manifest, out = _reference(FLOAT32_ONLY, tmp_path, "ref")
    assert "AssertionError: float32 only, got torch.float64" in (manifest.float64_unavailable or "")
    assert sorted(manifest.files) == [f"r32-{s}" for s in SEEDS]  # eager fp32 as ever, and no r64 at all
    seed = SEEDS[0]
    r32 = _leaves(out, manifest, f"r32-{seed}")
    ok = _judge(manifest, out, r32, tmp_path, seed, precision="tf32")  # allclose decides: the verdict stands
    assert ok.passed and "AssertionError" in ok.metrics["gate3_float64_unavailable"]
    assert not ok.metrics.get("harness_error")
    off = _judge(manifest, out, [r32[0] + 1e-2], tmp_path, seed, precision="tf32")  # only float64 could decide
    assert not off.passed and off.metrics["harness_error"] is True
    assert off.message.startswith("Gate 3 could not decide") and "float64 reference" in off.message


# ---- Gate 3 as a job runs it: captures compiled on this machine, the reference, candidate and judge apart ----


def test_gate3_of_the_mingpt_mlp_uses_its_float64_reference(cpu_capture):
    from kernelopt.pipeline.context import JobContext
    from kernelopt.pipeline.gates import gate3
    from kernelopt.pipeline.options import JobOptions
    from kernelopt.verify.stitched_model import StitchedRequest

    workdir = cpu_capture("mingpt_mlp_closures")
    ctx = JobContext(str(MINGPT), workdir, JobOptions(time_budget_s=600))
    try:  # the compiler's own module as the candidate: it passes, and rho is computed against r64
        verdict = gate3(ctx, StitchedRequest(str(MINGPT), str(workdir), {}, seeds=SEEDS, device="cpu"))
    finally:
        ctx.close()
    assert verdict.passed, verdict.message
    assert verdict.metrics["rho"] is not None and verdict.metrics["d_ref"] > 0
    assert "gate3_float64_unavailable" not in verdict.metrics and not verdict.metrics.get("harness_error")


def test_a_job_without_a_float64_reference_ends_as_a_harness_error(cpu_capture):
    from kernelopt.compiled.group import group_module_source, library_groups
    from kernelopt.pipeline.context import JobContext, JobFallback
    from kernelopt.pipeline.gates import gates_3_4
    from kernelopt.pipeline.model_job import unverified_outcome
    from kernelopt.pipeline.options import JobOptions
    from kernelopt.verify.stitched_model import StitchedRequest

    workdir = cpu_capture("float32_only")
    (g,) = library_groups((workdir / "baseline_module.py").read_text())  # addmm + ReLU, as linear_relu_small's
    assert g.body[-1].startswith("cpp_fused_mul_relu_0(buf1)")  # buf1: the group's output, by its last name
    ctx = JobContext(str(FLOAT32_ONLY), workdir, JobOptions(time_budget_s=600))

    def request(source: str) -> StitchedRequest:
        return StitchedRequest(str(FLOAT32_ONLY), str(workdir), {g.name: source}, seeds=SEEDS, device="cpu")

    try:
        honest = gates_3_4(ctx, request(group_module_source(g)), gamma=1.0, timed=False)
        assert honest.gate3.passed and "AssertionError" in honest.gate3.metrics["gate3_float64_unavailable"]
        off = group_module_source(g, body=g.body + ["buf1.add_(1e-2)"])  # fails allclose: float64 would decide
        with pytest.raises(JobFallback) as raised:
            gates_3_4(ctx, request(off), gamma=1.0, timed=False)
    finally:
        ctx.close()
    assert raised.value.code is Cause.HARNESS_ERROR and "could not decide" in str(raised.value)
    # the waterfall's ending, with that as its one unfinished evaluation: the harness's cause, not correctness
    outcome, cause, _ = unverified_outcome([], [raised.value], 1, gamma=1.0)
    assert outcome is Outcome.FALLBACK and cause.startswith(f"{Cause.HARNESS_ERROR}:")


def test_a_kernel_files_reference_that_refuses_float64_is_said_so_too(tmp_path):
    """A kernel file's Gate 3 reads the same manifest (verify/kernel_outputs.py): its PyTorch `reference`
    failing on float64 inputs leaves the fp32 outputs and the reason, not an exception that ends the job."""
    from kernelopt.verify.kernel_outputs import KernelOutputsRequest, kernel_outputs

    original = (Path(__file__).parent.parent / "benchmarks" / "kernels" / "add_relu_kernel.py").read_text()
    problem = tmp_path / "add_relu_float32_only.py"
    problem.write_text(original.replace("def reference(x, y):\n",
                                        "def reference(x, y):\n    assert x.dtype == torch.float32, 'float32 only'\n"))
    out = tmp_path / "ref"
    out.mkdir()
    manifest = run_in_child(kernel_outputs, KernelOutputsRequest(str(problem), str(out), SEEDS, device="cpu"),
                            timeout_s=300, scratch=out, read_only=[str(problem)], env={"TRITON_INTERPRET": "1"})
    assert sorted(manifest.files) == [f"r32-{s}" for s in SEEDS]
    assert "AssertionError: float32 only" in (manifest.float64_unavailable or "")


def test_kernelopt_check_builds_its_float64_reference_as_gate3_does(tmp_path):
    """`kernelopt check` of a minGPT-style result raised "mat1 and mat2 must have the same dtype" on an H100
    (its float64 copy was a deepcopy's `.double()`, whose lambda still called the float32 modules): the bench
    counted a correct 1.106x result as a wrong answer. A ModelNew 1e-3 off fails allclose, so the check needs
    its float64 reference: it now decides on it (and fails the candidate, by rho), not on a harness error."""
    from kernelopt.pipeline.check import CheckRequest, run_check

    off = tmp_path / "optimized_module.py"
    off.write_text(MINGPT.read_text() + "\n\nclass ModelNew(Model):\n"
                   "    def forward(self, x):\n        return super().forward(x) * 1.001\n")
    result = run_check(CheckRequest(str(off), str(MINGPT), seeds=[7001, 7002]))
    assert not result["passed"] and len(result["seeds"]) == 2, result
    for seed in result["seeds"]:
        assert seed["metrics"]["branch"] != "allclose" and seed["metrics"]["rho"] > 1, seed  # float64's verdict
    same = tmp_path / "same.py"
    same.write_text(MINGPT.read_text() + "\n\nclass ModelNew(Model):\n    pass\n")
    assert run_check(CheckRequest(str(same), str(MINGPT), seeds=[7001]))["passed"]
