"""Jobs in bf16 and fp16 beside fp32 (issue 8, item 5): per-dtype tolerances in the gates, generators
that declare their data dtypes, the Triton interpreter's limits in bf16, and the dtype a result carries.

Kernels run on the Triton interpreter (conftest sets TRITON_INTERPRET=1 without a GPU).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kernelopt.compiled.decompose import decompose
from kernelopt.compiled.group import library_groups, reference_source
from kernelopt.core.tolerance import Dtype, gate2_tolerance, gate3_tolerance
from kernelopt.pipeline.kernel_job import evaluate_kernel_file_batch
from kernelopt.pipeline.model_job import _group_target
from kernelopt.pipeline.options import JobOptions
from kernelopt.search.evaluate import EvalBatch, EvalContext
from kernelopt.search.generator import Candidate, KernelTarget
from kernelopt.search.generators.gemm_group import GemmFp32Generator
from kernelopt.search.registry import GENERATORS, applicable, describe, dtype_reason, make_generator
from kernelopt.verify.gate3_model import check_model
from kernelopt.verify.interpreter import InterpreterProbe, interpreter_cannot_run
from kernelopt.verify.stitched_model import StitchedRequest, gate3_stitched
from tests.conftest import HAS_CUDA

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "testdata"
CPU_CAPTURE = DATA / "captured_cpu" / "linear_relu_small"
# the same problem captured by Inductor's CPU backend in a bf16 job (`run_model_job` with dtype bf16)
CPU_CAPTURE_BF16 = DATA / "captured_cpu" / "linear_relu_small_bf16"
H200 = DATA / "captured_h200"
ADD_RELU = REPO / "benchmarks" / "kernels" / "add_relu_kernel.py"
SOFTMAX = REPO / "kernelopt" / "examples" / "row_softmax_kernel.py"

# A small add-relu kernel file; SCALE makes a candidate that is off by a known relative amount.
KERNEL_FILE = '''
import torch
import triton
import triton.language as tl

SCALE = {scale}


@triton.jit
def add_relu(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask).to(tl.float32) + tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (tl.maximum(v, 0.0) * SCALE).to(out_ptr.dtype.element_ty), mask=mask)


def launch(x, y):
    out = torch.empty_like(x)
    add_relu[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out


def reference(x, y):
    return torch.relu(x + y)


def get_inputs():
    return [torch.randn(4096), torch.randn(4096)]
'''


# ---------------------------------------------------------------- the tolerance table


def test_each_dtype_has_its_tolerances_and_bf16_fp16_are_kernelbenchs():
    assert (gate2_tolerance("fp32").rtol, gate2_tolerance("fp32").atol) == (1e-3, 1e-3)  # docs/architecture.md, Gate 2
    assert (gate3_tolerance("fp32").rtol, gate3_tolerance("fp32").atol) == (1e-4, 1e-4)  # docs/architecture.md, Gate 3
    for low in ("bf16", "fp16"):
        for tol in (gate2_tolerance(low), gate3_tolerance(low)):
            assert (tol.rtol, tol.atol) == (1e-2, 1e-2) and "KernelBench" in tol.source
    assert gate3_tolerance(Dtype.BF16).text() == "rtol=atol=1e-2" and gate3_tolerance().text() == "rtol=atol=1e-4"
    assert [d.value for d in Dtype] == ["fp32", "bf16", "fp16"]
    assert Dtype.of_torch_name("torch.bfloat16") is Dtype.BF16 and Dtype.of_torch_name("float64") is None
    with pytest.raises(ValueError, match="dtype must be fp32, bf16 or fp16, got 'int8'"):
        JobOptions(dtype="int8")
    assert JobOptions(dtype=Dtype.FP16).dtype == "fp16"  # stored as its plain value (JSON, the API)


def _gelu_pair():
    """Eager bf16 GELU-and-scale (rounded after each op) and the same fused, rounded once (as a compiled
    kernel computes it): bf16 roundings apart."""
    x = torch.randn(4096, generator=torch.Generator().manual_seed(5)) * 3
    xb = x.to(torch.bfloat16)
    r = torch.nn.functional.gelu(xb) * 1.7
    o = (torch.nn.functional.gelu(xb.float()) * 1.7).to(torch.bfloat16)
    r64 = torch.nn.functional.gelu(xb.double()) * 1.7
    return r, o, r64


def test_gate3_judges_a_bf16_run_by_bf16s_tolerance():
    r, o, r64 = _gelu_pair()
    assert not torch.equal(r, o)  # the two roundings differ somewhere
    bf16 = check_model([r], [o], [r64], "strict", dtype="bf16")
    assert bf16.passed and bf16.metrics["branch"] == "allclose", bf16.message
    assert "rtol=atol=1e-2" in bf16.message and bf16.metrics["dtype"] == "bf16"
    # the same outputs under fp32's allclose(1e-4): not close enough, the float64 test decides
    fp32 = check_model([r], [o], [r64], "strict", dtype="fp32")
    assert fp32.metrics["branch"] != "allclose" and "allclose rtol=atol=1e-4 failed" in fp32.message
    # a wrong bf16 answer (3% off) is still wrong at bf16's tolerance
    wrong = check_model([r], [(o.float() * 1.03).to(torch.bfloat16)], [r64], "strict", dtype="bf16")
    assert not wrong.passed and wrong.metrics["branch"] == "rho" and wrong.metrics["rho"] > 10


def _kernel_target(dtype: str) -> KernelTarget:
    return KernelTarget(name="add_relu", source="", kind="kernel-file", arg_names=[], signature={}, numels=[],
                        dtype=dtype)


@pytest.mark.parametrize("dtype, passes", [("fp16", True), ("fp32", False)])
def test_gate2_compares_with_the_jobs_dtype_tolerance(tmp_path, dtype, passes):
    """A candidate 0.4% off its original: within fp16's 1e-2, outside fp32's 1e-3."""
    problem = tmp_path / "add_relu_small.py"
    problem.write_text(KERNEL_FILE.format(scale="1.0"))
    cand = Candidate("add_relu", KERNEL_FILE.format(scale="1.004"), "test", "0.4% larger")
    ctx = EvalContext(str(problem), str(tmp_path), _kernel_target(dtype), [1, 2], dtype=dtype, device="cpu")
    (attempt,) = evaluate_kernel_file_batch(EvalBatch(ctx, [cand]))
    assert attempt.passed is passes, attempt.feedback
    tol = gate2_tolerance(dtype)
    if passes:
        assert attempt.metrics["rtol"] == tol.rtol == 1e-2
    else:
        assert attempt.gate == "gate2" and "exceeds atol 0.001 + rtol 0.001" in attempt.feedback


# ---------------------------------------------------------------- generators declare their dtypes


def _bf16_module() -> str:
    """Inductor's module for linear_relu_small in a bf16 job: every buffer bf16."""
    return (CPU_CAPTURE_BF16 / "baseline_module.py").read_text()


def test_group_buffers_carry_the_dtypes_the_module_states():
    src = (CPU_CAPTURE / "baseline_module.py").read_text()
    graph = decompose(src)
    assert {graph.buffers[n].dtype for n in graph.graph_inputs} == {"float32"}  # from get_args()
    (g,) = library_groups(src, graph)
    assert set(g.param_dtypes) == set(g.params) and set(g.param_dtypes.values()) == {"float32"}
    (gb,) = library_groups(_bf16_module())
    assert set(gb.param_dtypes.values()) == {"bfloat16"}
    for path in sorted(H200.iterdir()):  # the suite's real modules state every group buffer's dtype
        for grp in library_groups((path / "baseline_module.py").read_text()):
            assert set(grp.param_dtypes) == set(grp.params) and set(grp.param_dtypes.values()) == {"float32"}


def test_gemm_fp32_declines_groups_whose_buffers_are_not_fp32():
    gen = make_generator("gemm_fp32")
    (g,) = library_groups((CPU_CAPTURE / "baseline_module.py").read_text())
    assert applicable(gen, _group_target(g, 1.0, "strict")) is None
    (gb,) = library_groups(_bf16_module())
    target = _group_target(gb, 1.0, "strict")
    target.dtype = "bf16"
    reason = GemmFp32Generator().applicable(target)
    assert reason is not None and "gemm_fp32 is made for fp32 data only" in reason and "bfloat16" in reason
    assert applicable(gen, target) is not None and "bf16" in applicable(gen, target)
    # an fp32 job whose model computes this GEMM in bf16 itself: the buffers decide
    target.dtype = "fp32"
    assert "bf16" in GemmFp32Generator().applicable(target)
    # a group whose module states no dtypes is declined too: fp32 cannot be shown
    assert "does not state the dtypes" in GemmFp32Generator().applicable(
        _group_target(library_groups(_bf16_module().replace(", dtype=torch.bfloat16)", ")")
                                     .replace(", torch.bfloat16)", ")"))[0], 1.0, "strict"))


def test_registry_declares_each_generators_dtypes():
    assert GENERATORS["gemm_fp32"].dtypes == ("fp32",)
    assert GENERATORS["launch_config"].dtypes == GENERATORS["llm"].dtypes == ("fp32", "bf16", "fp16")
    assert {d["name"]: d["dtypes"] for d in describe()}["gemm_fp32"] == ("fp32",)
    assert dtype_reason("gemm_fp32", {"fp32"}) is None and "bf16" in dtype_reason("gemm_fp32", {"bf16", "fp32"})
    assert dtype_reason("launch_config", {"bf16"}) is None
    # a single kernel computes in the job's dtype: launch_config takes bf16 kernels, gemm_fp32 would not
    assert _kernel_target("bf16").data_dtypes() == {"bf16"}
    assert dtype_reason("launch_config", _kernel_target("bf16").data_dtypes()) is None
    assert "fp32 data only" in applicable(make_generator("gemm_fp32"), _kernel_target("bf16"))


# ---------------------------------------------------------------- the Triton interpreter in bf16


def _interpreter_adds_bf16_correctly() -> bool:
    sys.path.insert(0, str(ADD_RELU.parent))
    try:
        import add_relu_kernel as k
    finally:
        sys.path.pop(0)
    x = torch.linspace(-2, 2, 1024).to(torch.bfloat16)
    return torch.equal(k.launch(x, x), k.reference(x, x))


@pytest.mark.skipif(HAS_CUDA, reason="the Triton interpreter runs where there is no GPU")
def test_interpreter_probe_tells_its_own_limits_from_a_kernels_faults(tmp_path):
    if _interpreter_adds_bf16_correctly():
        pytest.skip("this Triton's interpreter computes bf16 arithmetic correctly")
    why = interpreter_cannot_run(InterpreterProbe(str(ADD_RELU), "bf16"))  # bf16 adds: garbage, no error
    assert why.startswith("the Triton interpreter cannot run this kernel in bf16: its output disagrees") \
        and "in fp32 it matches its reference; bf16 needs a GPU" in why
    # the interpreter runs these faithfully: nothing to say
    assert interpreter_cannot_run(InterpreterProbe(str(SOFTMAX), "bf16")) is None  # upcasts before arithmetic
    assert interpreter_cannot_run(InterpreterProbe(str(ADD_RELU), "fp16")) is None
    assert interpreter_cannot_run(InterpreterProbe(str(ADD_RELU), "fp32")) is None
    # a kernel wrong in every dtype is the kernel's fault: left to the gates
    wrong = tmp_path / "wrong.py"
    wrong.write_text(KERNEL_FILE.format(scale="1.5"))
    assert interpreter_cannot_run(InterpreterProbe(str(wrong), "bf16")) is None
    # a launch that raises in bf16 only (as an interpreter without bf16 would)
    raises = tmp_path / "raises.py"
    raises.write_text(KERNEL_FILE.format(scale="1.0").replace(
        "    out = torch.empty_like(x)\n",
        "    if x.dtype == torch.bfloat16:\n        raise NotImplementedError('no bfloat16 here')\n"
        "    out = torch.empty_like(x)\n"))
    why = interpreter_cannot_run(InterpreterProbe(str(raises), "bf16"))
    assert "its launch raised NotImplementedError: no bfloat16 here" in why


def kernelopt(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("TRITON_INTERPRET", None)  # the command decides that for its children
    return subprocess.run([sys.executable, "-m", "kernelopt.cli.main", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.skipif(HAS_CUDA, reason="checks the behaviour on a machine without a GPU")
def test_bench_and_check_in_bf16_without_a_gpu(tmp_path):
    """A bf16 run says it is one; a kernel the interpreter cannot run in bf16 ends no-gpu, not 'incorrect'."""
    if _interpreter_adds_bf16_correctly():
        pytest.skip("this Triton's interpreter computes bf16 arithmetic correctly")
    proc = kernelopt("bench", "benchmarks/kernels", "--only", "add_relu", "--dtype", "bf16", "--out", str(tmp_path),
                     "--time-limit", "300")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "bench.json").read_text())
    assert (summary["dtype"], summary["precision"], summary["device"]) == ("bf16", "strict", "cpu")
    (row,) = summary["rows"]
    assert row["result"]["dtype"] == "bf16" and row["result"]["precision"] == "strict"
    assert row["result"]["cause"].startswith("no-gpu: the Triton interpreter cannot run this kernel in bf16")
    assert summary["causes"] == {"no-gpu": 1} and summary["geomean"]["all"] is None
    assert "Run: dtype bf16, precision strict" in (tmp_path / "bench.md").read_text()
    report = json.loads((tmp_path / "all" / "add_relu_kernel" / "report.json").read_text())
    assert report["options"]["dtype"] == "bf16" and "search" not in report  # ended before any search
    md = (tmp_path / "all" / "add_relu_kernel" / "report.md").read_text()
    assert "- Dtype: `bf16` (model and inputs cast to it); Gate 2 rtol=atol=1e-2, Gate 3 rtol=atol=1e-2 " \
           "(KernelBench's bf16/fp16 tolerance" in md

    # a run in one dtype is not resumed in another: its rows would be counted as the other's
    again = kernelopt("bench", "benchmarks/kernels", "--only", "add_relu", "--out", str(tmp_path), "--resume")
    assert again.returncode == 2 and again.stdout == ""
    assert again.stderr.startswith(f"kernelopt bench: --resume: the run in {tmp_path} is dtype bf16, precision "
                                   "strict, this one dtype fp32, precision strict")

    check = kernelopt("check", str(ADD_RELU), str(ADD_RELU), "--dtype", "bf16")
    assert check.returncode == 1 and "Traceback" not in check.stderr
    assert check.stderr.startswith("kernelopt check: cannot check add_relu_kernel.py's kernel here: the Triton "
                                   "interpreter cannot run this kernel in bf16")


@pytest.mark.skipif(HAS_CUDA, reason="checks the behaviour on a machine without a GPU")
def test_check_in_fp16_casts_and_says_so():
    proc = kernelopt("check", str(SOFTMAX), str(SOFTMAX), "--dtype", "fp16", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["passed"] and result["dtype"] == "fp16" and result["summary"].endswith("(strict, fp16)")
    assert {s["metrics"]["dtype"] for s in result["seeds"]} == {"fp16"}
    assert {s["metrics"]["rtol"] for s in result["seeds"]} == {1e-2}


def test_gate3_on_a_bf16_model_restitched_on_the_cpu(cpu_capture):
    """A bf16 capture re-stitched with its group run by Inductor's own statements, against eager bf16
    (captured on this machine: tests/conftest.py's cpu_capture says why)."""
    workdir = cpu_capture("linear_relu_small", "bf16")
    problem = str(DATA / "problems" / "linear_relu_small.py")
    (g,) = library_groups((workdir / "baseline_module.py").read_text())
    req = StitchedRequest(problem, str(workdir), {g.name: reference_source(g)}, seeds=[101, 102], dtype="bf16",
                          device="cpu")
    result = gate3_stitched(req)
    assert result.passed, result.message
    assert result.metrics["dtype"] == "bf16" and result.metrics["rtol"] == 1e-2
    assert result.message.startswith("allclose to eager (rtol=atol=1e-2)")


# ---------------------------------------------------------------- reduced precision, relative to the data's dtype

_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def k(a_ptr, b_ptr, c_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    a = tl.load(a_ptr + r[:, None] * B + r[None, :])
    b = tl.load(b_ptr + r[:, None] * B + r[None, :])
    acc = tl.dot(a, b)
    tl.store(c_ptr + r[:, None] * B + r[None, :], {store})
'''


def _kinds(markers: list[str]) -> list[str]:
    return ["dot" if "tl.dot" in m else m.split(": ", 1)[1] for m in markers]


def test_reduced_precision_is_judged_against_the_jobs_dtype():
    from kernelopt.verify.precision import reduced_precision_markers, strict_verdict

    bf16_store = _KERNEL.format(store="acc.to(tl.bfloat16)")
    assert _kinds(reduced_precision_markers(bf16_store, "fp32")) == ["dot", "cast .to(tl.bfloat16)"]
    assert reduced_precision_markers(bf16_store, "bf16") == []  # the data's own dtype; TF32 has more bits
    assert _kinds(reduced_precision_markers(bf16_store, "fp16")) == ["cast .to(tl.bfloat16)"]  # 7 bits < fp16's 10
    fp8_store = _KERNEL.format(store="acc.to(tl.float8e4nv)")
    for dtype in ("fp32", "bf16", "fp16"):  # below every job's data
        assert "cast .to(tl.float8e4nv)" in _kinds(reduced_precision_markers(fp8_store, dtype))
    # Inductor's bf16 module states bf16 buffers: reduced for an fp32 job, not for the bf16 job it is
    assert reduced_precision_markers(_bf16_module(), "fp32") and reduced_precision_markers(_bf16_module(), "bf16") == []
    # under strict, a candidate that casts to bf16 where the baseline did not: rejected in fp32, not in bf16
    base = _KERNEL.format(store="acc")
    assert strict_verdict({"k": bf16_store}, base, "fp32")[0] is not None
    assert strict_verdict({"k": bf16_store}, base, "bf16") == (None, {})
    assert "float8" in strict_verdict({"k": fp8_store}, base, "bf16")[0]
