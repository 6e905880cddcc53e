"""Library groups on output modules Inductor wrote on an H200 at the suite's real sizes (issue 8).

tests/testdata/captured_h200/<problem>/ holds baseline_module.py and capture.json as
`kernelopt bench benchmarks/problems --only level2/` left them on one H200 (torch 2.11,
max-autotune: at these sizes Inductor kept cuBLAS/cuDNN library calls, with Triton epilogues).
Each capture's `restitch_bit_exact` is what the GPU measured when it re-ran the module.
"""
import ast
import json
from pathlib import Path

import pytest
import torch

from kernelopt.compiled.decompose import decompose
from kernelopt.compiled.group import GEMM_OPS, library_groups, rewrite_module
from kernelopt.compiled.restitch import stitched_source
from kernelopt.pipeline.model_job import _group_target
from kernelopt.search.generators.conv_group import ConvFp32Generator
from kernelopt.search.generators.conv_group import candidate_source as conv_candidate_source
from kernelopt.search.generators.gemm_group import GemmFp32Generator, candidate_source
from tests.gemm_candidate import emu_namespace

H200 = Path(__file__).parent / "testdata" / "captured_h200"
CAPTURES = sorted(H200.iterdir())


def test_there_are_at_least_four_gpu_captures_with_library_calls_and_epilogues():
    with_epilogue = [p.name for p in CAPTURES
                     if any(g.anchor_kind == "library" and g.epilogue and g.replaceable
                            for g in library_groups((p / "baseline_module.py").read_text()))]
    assert len(with_epilogue) >= 4, with_epilogue


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_group_restitch_on_an_h200_capture(path):
    src = (path / "baseline_module.py").read_text()
    meta = json.loads((path / "capture.json").read_text())
    assert meta["restitch_bit_exact"] is True and "H200" in meta["device_name"]
    # nothing replaced: the module itself, byte for byte
    assert rewrite_module(src, []) == src
    assert stitched_source(src, {"triton_any_kernel": "def run(*a, stream=None): pass"}) == src
    groups = library_groups(src)
    assert groups and all(g.anchor_kind == "library" and g.anchor_target.startswith("extern_kernels.")
                          for g in groups)
    # every group replaced: each launched once, its dead intermediates gone from call()
    names = [g.name for g in groups if g.replaceable]
    new = rewrite_module(src, names)
    launches = [s.args[0] for s in decompose(new).steps if s.kind == "other"]
    assert all(sum(a.startswith(f"{n}.run(") for a in launches) == 1 for n in names)
    call = next(n for n in ast.walk(ast.parse(new)) if isinstance(n, ast.FunctionDef) and n.name == "call")
    used = {n.id for n in ast.walk(call) if isinstance(n, ast.Name)}
    assert not {b for g in groups for b in g.dropped} & used
    for g in groups:
        target = _group_target(g, 1.0, "strict")
        reason = GemmFp32Generator().applicable(target)
        if g.op in GEMM_OPS:
            assert reason is None, reason
            ast.parse(candidate_source(g, "auto"))
        else:
            assert reason is not None and g.op in reason
            assert ConvFp32Generator().applicable(target) is None  # search/generators/conv_group.py takes these
            ast.parse(conv_candidate_source(g, "split3"))


@pytest.mark.parametrize("name", ["05_linear_sum", "06_linear_layernorm_residual"])
def test_bias_addmm_is_an_addmm_group(name):
    """Inductor's `extern_kernels.bias_addmm` (a broadcast bias through cuBLASLt) anchors an addmm group.

    Found by the suite bench: without it both problems ended `library-dominated`."""
    (g,) = library_groups((H200 / name / "baseline_module.py").read_text())
    assert (g.op, g.anchor_target) == ("addmm", "extern_kernels.bias_addmm") and g.epilogue
    assert "_EMU.addmm(reinterpret_tensor(" in candidate_source(g, "auto")


def test_emulated_addmm_takes_bias_addmms_stride_0_bias():
    """The construction the candidate embeds, on this CPU (split3 on fp32 GEMMs), against float64."""
    emu = emu_namespace()["_Emu"]("auto")
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, 96, generator=g), torch.randn(96, 80, generator=g)
    row = torch.randn(80, generator=g)
    bias = torch.as_strided(row, (64, 80), (0, 1))  # what bias_addmm receives
    out = torch.empty(64, 80)
    emu.addmm(bias, a, b, alpha=1, beta=1, out=out)
    ref = (row.double() + a.double() @ b.double())
    err = (out.double() - ref).abs().max() / ref.abs().max()
    fp32 = (torch.addmm(row, a, b).double() - ref).abs().max() / ref.abs().max()
    assert emu.last_method == "split3" and err <= max(fp32, 1e-7) * 4


def test_gate2s_float64_branch_is_for_groups_of_library_calls_alone():
    """A group whose statements are library calls alone can be re-run on float64 operands (Gate 2's float64
    branch: docs/architecture.md, Gate 2); one with a Triton epilogue cannot (its kernels are compiled for fp32)."""
    from kernelopt.search.evaluate import EvalContext

    def branch(name):
        (g,) = [g for g in library_groups((H200 / name / "baseline_module.py").read_text()) if g.replaceable]
        return EvalContext("problem.py", "workdir", _group_target(g, 1.0, "strict"), [1]).reference_runs_in_float64

    assert branch("22_matmul_large_k") is True  # K = 524288: extern_kernels.mm alone
    assert branch("02_linear_swish_scale") is False  # mm + a Triton epilogue
