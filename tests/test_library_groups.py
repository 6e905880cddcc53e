"""Library groups (issue 8): a GEMM/convolution and its epilogue, detected, re-stitched and gated as one.

GPU captures (tests/testdata/captured, H200): Inductor's max-autotune chose Triton GEMM and
convolution *templates* there, so those anchor the groups; CPU captures
(tests/testdata/captured_cpu, Inductor's CPU backend) keep `extern_kernels.addmm/bmm`
library calls with C++ epilogue kernels, and run here: re-stitch bit-exactness, Gates 1-3.
"""
import ast
from pathlib import Path

import pytest
import torch

from kernelopt.compiled.decompose import decompose
from kernelopt.compiled.group import library_groups, reference_source, rewrite_module
from kernelopt.compiled.restitch import ModelContext, stitched_source
from kernelopt.core.precision import declared_precision
from kernelopt.pipeline.model_job import _group_target
from kernelopt.profiling.baseline import BaselineProfile, KernelShare
from kernelopt.search.evaluate import EvalBatch, EvalContext, evaluate_batch
from kernelopt.search.generators.gemm_group import GemmFp32Generator, candidate_source
from kernelopt.search.registry import GENERATORS, describe, make_generator
from kernelopt.search.strategy import fallback_cause, plan_groups
from kernelopt.verify.precision import reduced_precision_markers
from kernelopt.verify.stitched_model import StitchedRequest, gate3_stitched

DATA = Path(__file__).parent / "testdata"
GPU = DATA / "captured"
CPU = DATA / "captured_cpu"


def _groups(path: Path):
    return library_groups((path / "baseline_module.py").read_text())


def test_groups_on_gpu_captures():
    (lg,) = _groups(GPU / "linear_gelu")
    assert (lg.op, lg.anchor_kind, lg.kernels) == ("addmm", "template", ["triton_tem_fused_addmm_gelu_t_0"])
    assert lg.replaceable and lg.arg_names == ["in_ptr0", "in_ptr1", "in_ptr2", "out_ptr0"]

    (conv,) = _groups(GPU / "conv_bn_relu")
    assert conv.op == "convolution" and conv.kernels[0] == "triton_tem_fused_convolution_2"
    assert len(conv.epilogue) == 3  # batch-norm statistics, their update, normalize + relu
    assert conv.outputs == ["arg4_1", "arg5_1", "buf9"]  # running stats (mutated inputs) and the result
    assert set(conv.dropped) == {"buf2", "buf3", "buf4", "buf5", "buf6", "buf7"}
    roles = dict(zip(conv.params, conv.arg_names, strict=True))
    assert roles["arg4_1"].startswith("in_out_ptr") and roles["buf9"].startswith("out_ptr")
    assert roles["buf0"].startswith("in_ptr")

    att = _groups(GPU / "attention_small")
    assert [g.op for g in att] == ["addmm", "bmm", "bmm", "addmm"]
    assert att[1].kernels == ["triton_tem_fused_bmm_split_transpose_view_1",
                              "triton_per_fused__softmax_amax_div_mul_sub_2"]  # softmax in place: epilogue
    assert all(g.replaceable for g in att)


def test_groups_on_cpu_captures_are_library_calls_with_epilogues():
    (g,) = _groups(CPU / "linear_relu_small")
    assert (g.op, g.anchor_kind, g.kernels) == ("addmm", "library", ["extern_kernels.addmm", "cpp_fused_mul_relu_0"])
    att = _groups(CPU / "attention_small")
    assert [(x.op, x.anchor_target) for x in att] == [("addmm", "extern_kernels.addmm"), ("bmm", "extern_kernels.bmm"),
                                                      ("addmm", "extern_kernels.addmm")]
    assert len(att[1].epilogue) == 2 and "buf1" in att[1].dropped  # the scores never leave the group


@pytest.mark.parametrize("path", sorted(GPU.iterdir()) + sorted(CPU.iterdir()), ids=lambda p: p.name)
def test_restitch_with_nothing_replaced_is_the_module_itself(path):
    src = (path / "baseline_module.py").read_text()
    assert rewrite_module(src, []) == src
    assert stitched_source(src, {"triton_any_kernel": "def run(*a, stream=None): pass"}) == src
    names = [g.name for g in library_groups(src) if g.replaceable]
    if names:  # every group replaced: a valid module launching the groups, no dropped buffer left
        new = rewrite_module(src, names)
        steps = [s.args[0] for s in decompose(new).steps if s.kind == "other"]
        assert all(any(a.startswith(f"{n}.run(") for a in steps) for n in names)
        dropped = {b for g in library_groups(src) for b in g.dropped}
        call = [n for n in ast.walk(ast.parse(new)) if isinstance(n, ast.FunctionDef) and n.name == "call"][0]
        assert not dropped & {n.id for n in ast.walk(call) if isinstance(n, ast.Name)}


@pytest.mark.parametrize("name", ["linear_relu_small", "attention_small"])
def test_group_restitch_with_inductors_own_statements_is_bit_exact(name, cpu_capture):
    workdir = cpu_capture(name)  # run here: captured on this machine (tests/conftest.py says why)
    ctx = ModelContext(str(DATA / "problems" / f"{name}.py"), str(workdir), device="cpu")
    groups = [g for g in _groups(workdir) if g.replaceable]
    inputs = ctx.inputs(3)
    base = ctx.run(ctx.module(), inputs)
    out = ctx.run(ctx.module({g.name: reference_source(g) for g in groups}), inputs)
    assert all(torch.equal(a, b) for a, b in zip(base, out, strict=True))


# aten's convolution on Inductor's CPU backend: its ReLU is then written in place into the convolution's result
NO_PREPACK = {"TORCHINDUCTOR_CPP_WEIGHT_PREPACK": "0"}


def test_a_convolution_whose_epilogue_writes_its_result_in_place_is_a_group(cpu_capture):
    """`buf1 = extern_kernels.convolution(...)`, `buf2 = buf1`, the epilogue writes buf2, call() returns it: the
    caller now allocates buf1 with the layout Inductor asserts and the group copies the call's result into it
    (was: "buf1 is returned by a library call inside the group and used after it", no search). The call
    statement itself is unchanged, so the convolution generators read and rewrite it as before."""
    from kernelopt.search.generators.conv_group import read_call

    workdir = cpu_capture("conv_relu_inplace", env=NO_PREPACK)
    source = (workdir / "baseline_module.py").read_text()
    (g,) = library_groups(source)
    assert g.op == "convolution" and not g.reason, g.reason
    out = g.outputs[0]
    assert g.body[g.anchor_in_body].startswith(f"{out} = extern_kernels.convolution(")
    a = g.anchor_in_body
    assert [g.body[a - 1], g.body[a + 1], g.body[a + 2]] == [
        f"_kernelopt_out_{out} = {out}", f"_kernelopt_out_{out}.copy_({out})", f"{out} = _kernelopt_out_{out}"]
    assert g.arg_names[-1] == "out_ptr0"
    assert g.param_shapes[out] == [[2, 8, 8, 8], [512, 1, 64, 8]] and g.param_dtypes[out] == "float32"
    conv, why = read_call(g)
    assert conv is not None and conv.target == out and conv.out_stride == (512, 1, 64, 8), why
    new = rewrite_module(source, [g.name])
    assert f"{out} = empty_strided_cpu((2, 8, 8, 8), (512, 1, 64, 8), torch.float32)" in new
    # re-stitched with the group's own statements, the model computes what Inductor's module computes, bit for bit
    ctx = ModelContext(str(DATA / "problems" / "conv_relu_inplace.py"), str(workdir), device="cpu")
    inputs = ctx.inputs(3)
    base = ctx.run(ctx.module(), inputs)
    again = ctx.run(ctx.module({g.name: reference_source(g)}), inputs)
    assert all(torch.equal(a, b) for a, b in zip(base, again, strict=True))
    # and a candidate for it is gated as any group's: the group's own statements pass Gates 1-2 on real inputs
    from kernelopt.compiled.group import group_module_source
    from kernelopt.search.generator import Candidate

    target = _group_target(g, 1.0, "strict")
    ectx = EvalContext(str(DATA / "problems" / "conv_relu_inplace.py"), str(workdir), target, [1, 2, 3], device="cpu")
    (attempt,) = evaluate_batch(EvalBatch(ectx, [Candidate(g.name, group_module_source(g), "test", "its own")]))
    assert attempt.passed, attempt.feedback


def _small_group_target(precision="strict", workdir=CPU / "linear_relu_small"):
    (g,) = _groups(workdir)
    return g, _group_target(g, 1.0, precision)


def test_gemm_group_candidates_pass_gates_1_2_on_the_interpreter(cpu_capture):
    workdir = cpu_capture("linear_relu_small")
    g, target = _small_group_target(workdir=workdir)
    gen = make_generator("gemm_fp32")
    assert gen.applicable(target) is None
    cands = [c for c in gen.propose(target, [], [], 8) if c.params["method"] in ("auto", "presplit")]
    assert len(cands) == 2
    ctx = EvalContext(str(DATA / "problems" / "linear_relu_small.py"), str(workdir), target, [1, 2, 3], device="cpu")
    attempts = evaluate_batch(EvalBatch(ctx, cands))
    for a in attempts:
        assert a.passed, (a.candidate.params, a.feedback)
        assert a.metrics["seeds"] == 3 and a.metrics["max_abs_err_arg3"] < 1e-5
        # the construction that actually ran is recorded (`auto` decides per shape at run time)
        assert a.metrics["resolved_method"] in ("presplit", "bf16x6", "split3"), a.metrics


def test_plain_tf32_fails_gate3_under_strict_and_emulation_needs_the_float64_test(cpu_capture):
    workdir = cpu_capture("linear_relu_small")
    g, target = _small_group_target("tf32", workdir)
    (tf32,) = [c for c in GemmFp32Generator().propose(target, [], [], 8) if c.params["method"] == "tf32"]
    assert declared_precision(tf32.source) == "tf32"
    assert any("declared precision 'tf32'" in m for m in reduced_precision_markers(tf32.source))
    req = dict(problem_path=str(DATA / "problems" / "linear_relu_small.py"), workdir=str(workdir),
               device="cpu", seeds=[101])
    strict = gate3_stitched(StitchedRequest(replacements={g.name: tf32.source}, precision="strict", **req))
    # on a CPU the "TF32" GEMM is plain fp32 (allclose would pass): rejected for what it is, not for its error
    assert not strict.passed and strict.metrics["branch"] == "reduced-precision"
    assert gate3_stitched(StitchedRequest(replacements={g.name: tf32.source}, precision="tf32", **req)).passed
    emulated = gate3_stitched(StitchedRequest(replacements={g.name: candidate_source(g, "presplit")},
                                              precision="strict", **req))
    assert emulated.passed and emulated.metrics["branch"] == "rho" and emulated.metrics["rho"] <= 10
    assert emulated.metrics["emulation"] == {g.name: "presplit"}


def test_registry_lists_generators_with_what_they_touch():
    names = [d["name"] for d in describe()]
    assert names == ["graph_rewrite", "compile_variants", "launch_config", "gemm_fp32", "conv_fp32", "cudnn_autotune",
                     "conv_transpose_phases", "helion_config", "llm", "llm_codegen", "llm_fusion"]
    assert GENERATORS["graph_rewrite"].targets == ("graph",) and "rewrite/catalogue.py" in GENERATORS["graph_rewrite"].touches
    spec = GENERATORS["gemm_fp32"]
    assert spec.targets == ("group",) and spec.policies == ("strict", "tf32") and "addmm" in spec.touches
    g, target = _small_group_target()
    assert "tf32" not in [c.params["method"] for c in GemmFp32Generator().propose(target, [], [], 8)]
    assert make_generator("launch_config").applicable(target) is not None  # kernels only
    (tem,) = _groups(GPU / "linear_gelu")
    assert "template" in GemmFp32Generator().applicable(_group_target(tem, 1.0, "strict"))


def test_library_dominated_is_no_dead_end_when_a_group_can_be_searched():
    (g,) = _groups(CPU / "linear_relu_small")
    prof = BaselineProfile(end_to_end_ms=1.0, noise_pct=0.5, timing_method="t", gpu_total_ms=1.0,
                           kernels=[KernelShare("sm90_gemm", "library", 0.97, 0.97),
                                    KernelShare("cpp_fused_mul_relu_0", "triton", 0.03, 0.03)],
                           library_share=0.97, triton_share=0.03)
    (d,) = plan_groups([g], prof, 1.03)
    assert d.searched and d.share == pytest.approx(1.0)
    assert fallback_cause(prof, [d], 1.03) is None
    d.searched = False
    assert fallback_cause(prof, [d], 1.03).startswith("library-dominated")


def test_cli_lists_the_generators(capsys):
    from kernelopt.cli.main import main

    assert main(["generators"]) == 0
    out = capsys.readouterr().out.splitlines()
    names = [line.split()[0] for line in out]
    assert names[:5] == ["graph_rewrite", "compile_variants", "launch_config", "gemm_fp32", "conv_fp32"]
    assert "[default; graph; strict/tf32; fp32/bf16/fp16]" in out[names.index("compile_variants")]
    assert set(names) == {"graph_rewrite", "compile_variants", "launch_config", "gemm_fp32", "conv_fp32", "cudnn_autotune",
                          "conv_transpose_phases", "helion_config", "llm", "llm_codegen", "llm_fusion"}
    assert "[default; kernel-file; strict/tf32; fp32/bf16/fp16]" in out[names.index("helion_config")]
    assert "[opt-in; chain; strict/tf32; fp32/bf16/fp16]" in out[names.index("llm_fusion")]
    # targets (with the kernel kinds it rewrites); policies; the data dtypes it is made for (search.registry)
    assert "[default; group; strict/tf32; fp32]" in out[names.index("gemm_fp32")]
    assert ("[default; kernel/kernel-file (pointwise/reduction/persistent); strict/tf32; fp32/bf16/fp16]"
            in out[names.index("launch_config")])
    assert "[default; graph; strict/tf32; fp32/bf16/fp16]" in out[names.index("graph_rewrite")]


def test_a_deployed_fp32_emulation_is_not_reported_as_reduced_precision():
    """Its source holds tensor-core code (markers), but it passed Gate 3 as a declared fp32 emulation."""
    from kernelopt.verify.precision import deployed_reduced_precision

    g, _ = _small_group_target("tf32")
    emulated = candidate_source(g, "presplit")
    assert reduced_precision_markers(emulated)  # the embedded kernels do use TF32 products
    assert deployed_reduced_precision({g.name: emulated}) == []
    assert deployed_reduced_precision({g.name: candidate_source(g, "tf32")})  # plain TF32 is reduced
    assert deployed_reduced_precision({g.name: candidate_source(g, "bf16x3")})  # so is bf16x3 (ρ up to 18)


def test_under_tf32_the_reduced_constructions_come_first_and_strict_never_sees_them():
    """bf16x3 is for the GEMMs whose plain TF32 fails Gate 2 (H200: suite level1/22, K = 524288)."""
    from kernelopt.verify.precision import strict_verdict

    g, tf32_target = _small_group_target("tf32")
    _, strict_target = _small_group_target("strict")
    gen = GemmFp32Generator()
    assert gen.methods(tf32_target) == ["tf32", "bf16x3", "auto", "presplit", "bf16x6", "split3"]
    assert gen.methods(strict_target) == ["auto", "presplit", "bf16x6", "split3"]
    (bf16x3,) = [c for c in gen.propose(tf32_target, [], [], 8) if c.params["method"] == "bf16x3"]
    assert bf16x3.params["precision"] == "bf16x3" and declared_precision(bf16x3.source) == "bf16x3"
    reason, emulated = strict_verdict({g.name: bf16x3.source}, "")
    assert reason is not None and "reduced precision (declared 'bf16x3')" in reason and not emulated


def test_a_group_overlaps_its_epilogue_kernels_and_nothing_else():
    # attention_small (H200 capture): the bmm group holds the softmax kernel, itself a searchable target
    from kernelopt.compiled.group import target_overlaps

    att = _groups(GPU / "attention_small")
    overlaps = target_overlaps(att)
    assert overlaps[att[1].name] == {"triton_tem_fused_bmm_split_transpose_view_1",
                                     "triton_per_fused__softmax_amax_div_mul_sub_2"}
    assert all(not (o & {g.name for g in att}) for o in overlaps.values())  # the groups share no step
    (cpu,) = _groups(CPU / "linear_relu_small")
    assert target_overlaps([cpu]) == {cpu.name: {"cpp_fused_mul_relu_0"}}  # not the library call itself
