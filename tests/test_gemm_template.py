"""gemm_fp32 on a GEMM Inductor gave its own Triton `mm` template (search/generators/gemm_template.py).

tests/testdata/captured_h200_templates/18_matmul_small_k: the output module Inductor wrote on an H200
for benchmarks/problems/level1/18 (16384×32 · 32×16384, fp32, max-autotune): a Triton template, not
cuBLAS, so the suite's row was "no-candidates: the GEMM is a Triton template Inductor chose".
tests/testdata/captured/attention_small (H200, torch 2.11) has two plain bmm templates reading slices
of one qkv buffer and two addmm templates (a Linear's bias added in the template); linear_gelu's
template also fuses a GELU, and is declined.
"""
import ast
import types
from pathlib import Path

import pytest
import torch

from kernelopt.compiled.group import library_groups, rewrite_module
from kernelopt.pipeline.model_job import _group_target
from kernelopt.search.generator import Attempt
from kernelopt.search.generators.gemm_group import GemmFp32Generator, candidate_source, emulated_body
from kernelopt.search.generators.gemm_template import TemplateGemm, read_template_gemm
from tests.gemm_candidate import emu_namespace, load_source

DATA = Path(__file__).parent / "testdata"
SMALL_K = DATA / "captured_h200_templates" / "18_matmul_small_k" / "baseline_module.py"
#: the output module Inductor wrote on an H200 for benchmarks/problems/level3/04 (fp32, max-autotune, torch 2.11)
ATTENTION = DATA / "captured_h200_templates" / "04_causal_self_attention" / "baseline_module.py"


def _template_groups(path: Path):
    return [g for g in library_groups(path.read_text()) if g.anchor_kind == "template"]


def test_the_plain_mm_template_is_read_as_the_gemm_it_computes():
    (g,) = _template_groups(SMALL_K)
    assert (g.op, g.anchor_target, g.params) == ("mm", "triton_tem_fused_mm_0", ["arg0_1", "arg1_1", "buf0"])
    read = read_template_gemm(g.kernel_sources[g.anchor_target], g.anchor_target)
    assert read == TemplateGemm(op="mm", a_arg=0, b_arg=1, out_arg=2, a_offset=0, b_offset=0,
                                a_size=(16384, 32), a_strides=(32, 1),
                                b_size=(32, 16384), b_strides=(16384, 1), out_size=(16384, 16384),
                                out_strides=(16384, 1), allow_tf32=False)


def test_gemm_fp32_applies_to_it_and_proposes_every_construction():
    (g,) = _template_groups(SMALL_K)
    target = _group_target(g, 1.0, "strict")
    gen = GemmFp32Generator()
    assert gen.applicable(target) is None
    proposed = gen.propose(target, [], [], budget=8)
    assert [c.params["method"] for c in proposed] == ["auto", "presplit", "bf16x6", "split3"]
    body = candidate_source(g, "split3")
    ast.parse(body)
    # the launch became the product of the template's views; the template kernel is not launched
    assert ("_EMU.mm(torch.as_strided(arg0_1, (16384, 32), (32, 1)), torch.as_strided(arg1_1, (32, 16384), "
            "(16384, 1)), out=torch.as_strided(buf0, (16384, 16384), (16384, 1)))") in body
    assert "triton_tem_fused_mm_0.run(" not in body.split("_RUN_SOURCE = ", 1)[1]
    # under `tf32` plain TF32 is proposed first, as for a library call
    assert gen.methods(_group_target(g, 1.0, "tf32"))[0] == "tf32"
    # the re-stitched module launches the group once, in place of the template
    new = rewrite_module(SMALL_K.read_text(), [g.name])
    assert f"{g.name}.run(arg0_1, arg1_1, buf0)" in new and "triton_tem_fused_mm_0.run(" not in new


def test_a_template_that_fuses_an_activation_is_declined_with_the_reason():
    (g,) = _template_groups(DATA / "captured" / "linear_gelu" / "baseline_module.py")
    reason = GemmFp32Generator().applicable(_group_target(g, 1.0, "strict"))
    assert reason is not None and "Triton template Inductor chose, not a plain one" in reason
    assert "epilogue does more than add its bias" in reason  # the GELU Inductor fused into the template


def test_a_linear_layers_addmm_template_is_read_with_its_broadcast_bias_and_transposed_weight():
    """attention_small's qkv projection: bias (192,), input (512, 64), weight (192, 64) read transposed."""
    (g,) = [g for g in _template_groups(DATA / "captured" / "attention_small" / "baseline_module.py")
            if g.anchor_target == "triton_tem_fused_addmm_t_view_0"]
    assert GemmFp32Generator().applicable(_group_target(g, 1.0, "strict")) is None
    stmt = emulated_body(g)[g.anchor_in_body]
    assert stmt == ("_EMU.addmm(torch.as_strided(arg1_1, (512, 192), (0, 1)), torch.as_strided(arg2_1, (512, 64), "
                    "(64, 1)), torch.as_strided(arg0_1, (64, 192), (1, 64)), out=torch.as_strided(buf0, (512, 192), "
                    "(192, 1)))")
    # the statement on this CPU: x @ W.T + b, fp32-accurate, into the caller's buffer
    emu = emu_namespace()["_Emu"]("auto")
    gen = torch.Generator().manual_seed(7)
    bias, x, weight = torch.randn(192, generator=gen), torch.randn(512, 64, generator=gen), torch.randn(192, 64,
                                                                                                    generator=gen)
    out = torch.full((512, 192), float("nan"))
    exec(stmt, {"torch": torch, "_EMU": emu, "arg1_1": bias, "arg2_1": x, "arg0_1": weight, "buf0": out})
    ref = torch.nn.functional.linear(x.double(), weight.double(), bias.double())
    fp32 = (torch.nn.functional.linear(x, weight, bias).double() - ref).abs().max() / ref.abs().max()
    assert (out.double() - ref).abs().max() / ref.abs().max() <= 4 * max(fp32, 1e-7)
    # an epilogue that is not the bias added (a scale, a product) is not read as one
    src = g.kernel_sources[g.anchor_target]
    for edited in (src.replace("tmp1 = acc + tmp0", "tmp1 = acc * tmp0"),
                   src.replace("tmp1 = acc + tmp0", "tmp1 = acc + tmp0\n    tmp2 = tmp1 * 2.0").replace(
                       ", tmp1, mask)", ", tmp2, mask)")):
        assert edited != src
        assert "does more than add its bias" in read_template_gemm(edited, g.anchor_target, "addmm")


def test_the_bmm_templates_of_an_attention_are_read_with_their_slices_of_one_qkv_buffer():
    """attention_small (torch 2.11, H200): q·kᵀ reads both operands from the qkv projection's output
    (`A = arg_B`, `B = arg_B + 64`), attn·v reads v at offset 128; the batch count comes from the output."""
    bodies = {g.anchor_target: emulated_body(g)[g.anchor_in_body]
              for g in _template_groups(DATA / "captured" / "attention_small" / "baseline_module.py")
              if g.op == "bmm"}
    assert bodies == {
        "triton_tem_fused_bmm_split_transpose_view_1":
            "_EMU.bmm(torch.as_strided(buf0, (4, 128, 64), (24576, 192, 1)), torch.as_strided(buf0, (4, 64, 128), "
            "(24576, 1, 192), buf0.storage_offset() + 64), out=torch.as_strided(buf1, (4, 128, 128), (16384, 128, 1)))",
        "triton_tem_fused__softmax_bmm_div_mul_split_sub_view_3":
            "_EMU.bmm(torch.as_strided(buf4, (4, 128, 128), (16384, 128, 1)), torch.as_strided(buf0, (4, 128, 64), "
            "(24576, 192, 1), buf0.storage_offset() + 128), out=torch.as_strided(buf5, (4, 128, 64), (8192, 64, 1)))",
    }


def test_the_attn_v_candidate_computes_the_product_of_the_slices_on_this_cpu():
    (g,) = [g for g in _template_groups(DATA / "captured" / "attention_small" / "baseline_module.py")
            if g.anchor_target.startswith("triton_tem_fused__softmax_bmm")]
    assert g.params == ["buf4", "buf0", "buf5"] and g.kernels == [g.anchor_target]  # no epilogue to run
    runner = _bound(candidate_source(g, "auto"), "attn_v")
    gen = torch.Generator().manual_seed(5)
    attn, qkv = torch.rand(4, 128, 128, generator=gen), torch.randn(512, 192, generator=gen)
    out = torch.full((4, 128, 64), float("nan"))
    runner.run(attn, qkv, out)
    v = qkv.view(4, 128, 192)[:, :, 128:]
    ref = torch.bmm(attn.double(), v.double())
    err = (out.double() - ref).abs().max() / ref.abs().max()
    fp32 = (torch.bmm(attn, v).double() - ref).abs().max() / ref.abs().max()
    assert err <= 4 * max(fp32, 1e-7), (err, fp32)


def test_a_bmm_template_without_its_batch_count_is_declined():
    (g,) = [g for g in _template_groups(DATA / "captured" / "attention_small" / "baseline_module.py")
            if g.anchor_target.startswith("triton_tem_fused__softmax_bmm")]
    src = g.kernel_sources[g.anchor_target]
    assert "batch count" in read_template_gemm(src, g.anchor_target, "bmm")  # no shapes given
    assert not isinstance(read_template_gemm(src, g.anchor_target, "bmm", [None, None, [4, 128, 64]]), str)
    assert "batch count" in read_template_gemm(src, g.anchor_target, "bmm", [None, None, [4, 64, 128]])
    moved = src.replace("B = arg_B + 128", "B = arg_B + 128 * K")
    shapes = [None, None, [4, 128, 64]]
    assert "straight from its arguments" in read_template_gemm(moved, g.anchor_target, "bmm", shapes)


def test_an_epilogue_written_into_the_template_is_found():
    (g,) = _template_groups(SMALL_K)
    src = g.kernel_sources[g.anchor_target]
    relu = src.replace("tl.store(out_ptr0 + (tl.broadcast_to(xindex, [BLOCK_M, BLOCK_N])), acc, mask)",
                       "tmp0 = triton_helpers.maximum(acc, 0.0)\n"
                       "    tl.store(out_ptr0 + (tl.broadcast_to(xindex, [BLOCK_M, BLOCK_N])), tmp0, mask)")
    assert relu != src
    assert "epilogue or a prologue" in read_template_gemm(relu, g.anchor_target)
    scaled = src.replace(", acc, mask)", ", acc * 2.0, mask)")
    assert "other than its accumulator" in read_template_gemm(scaled, g.anchor_target)
    transposed = src.replace("stride_am = 32", "stride_am = 1")
    assert "disagrees with the strides" in read_template_gemm(transposed, g.anchor_target)
    assert "not its convolution template" in read_template_gemm(src, g.anchor_target, "convolution")


def _bound(source: str, name: str):
    """The candidate module bound as the runtime binds it, to a namespace standing in for the output module
    (the CPU has no CUDA stream; the template the candidate replaces is never launched)."""
    output_module = types.ModuleType("kernelopt_test_output_module")
    output_module.__dict__.update(torch=torch, get_raw_stream=lambda index: None)
    return load_source(source, f"kernelopt_test_{name}").bind(output_module)


@pytest.mark.parametrize("method", ["split3", "auto"])
def test_the_candidate_computes_the_templates_product_into_its_output(method):
    """The captured module at a CPU's size (16384 → 256: M = N = 256, K = 32; every stride follows),
    its candidate run on this CPU: fp32-accurate against float64, written into the caller's buffer."""
    small = SMALL_K.read_text().replace("16384", "256")
    (g,) = [g for g in library_groups(small) if g.anchor_kind == "template"]
    runner = _bound(candidate_source(g, method), f"tem_{method}")
    gen = torch.Generator().manual_seed(3)
    a, b = torch.randn(256, 32, generator=gen), torch.randn(32, 256, generator=gen)
    out = torch.full((256, 256), float("nan"))
    runner.run(a, b, out)
    ref = a.double() @ b.double()
    err = (out.double() - ref).abs().max() / ref.abs().max()
    fp32 = ((a @ b).double() - ref).abs().max() / ref.abs().max()
    assert err <= 4 * max(fp32, 1e-7), (err, fp32)
    assert runner.kernelopt_resolved_method() == "split3"  # K = 32 (and no GPU): the output-bound construction


def test_search_history_of_a_template_group_is_not_proposed_again():
    (g,) = _template_groups(SMALL_K)
    target = _group_target(g, 1.0, "strict")
    gen = GemmFp32Generator()
    first = gen.propose(target, [], [], budget=2)
    history = [Attempt(candidate=c, passed=True, gate="timed", feedback="") for c in first]
    assert {c.params["method"] for c in gen.propose(target, [], history, budget=8)} == {"bf16x6", "split3"}


def test_a_bmm_template_named_after_the_addmm_it_reads_from_is_read_as_the_bmm_it_computes():
    """level3/04 on the H200: q·kᵀ is a bmm template Inductor names `..._addmm_bmm_...` (its source nodes
    include the qkv projection's addmm); the group was taken for an addmm and the suite's tf32 row declined it
    ("takes (arg_A, arg_B, out_ptr0), not only A, B, a bias and its output"). Its text says bmm."""
    (g,) = _template_groups(ATTENTION)
    assert (g.op, g.anchor_target) == ("bmm", "triton_tem_fused__unsafe_view_addmm_bmm_clone_split_transpose_view_3")
    assert GemmFp32Generator().applicable(_group_target(g, 1.0, "strict")) is None
    assert emulated_body(g)[g.anchor_in_body] == (
        "_EMU.bmm(torch.as_strided(buf1, (96, 1024, 64), (65536, 64, 1)), torch.as_strided(buf2, (96, 64, 1024), "
        "(65536, 1024, 1)), out=torch.as_strided(buf3, (96, 1024, 1024), (1048576, 1024, 1)))")
    proposed = GemmFp32Generator().propose(_group_target(g, 1.0, "strict"), [], [], budget=1)
    assert proposed[0].description.startswith("bmm by auto")
    assert f"{g.name}: bmm by auto" in proposed[0].source
    # the text decides, whatever op the group was given (a baddbmm is not read: its bias is not a plain bmm)
    src = g.kernel_sources[g.anchor_target]
    for hint in ("mm", "addmm", "bmm"):
        read = read_template_gemm(src, g.anchor_target, hint, [None, None, [96, 1024, 1024]])
        assert not isinstance(read, str) and read.op == "bmm"
    assert "baddbmm template" in read_template_gemm(src, g.anchor_target, "baddbmm")


def test_a_template_whose_text_does_not_say_batched_keeps_the_op_its_name_lists():
    """Should a bmm template ever state no batch strides, it is still a group (its reading then says why not)."""
    text = (DATA / "captured" / "attention_small" / "baseline_module.py").read_text().replace("stride_aq", "stride_xq")
    ops = sorted(g.op for g in library_groups(text) if g.anchor_kind == "template")
    assert ops == ["addmm", "addmm", "bmm", "bmm"]
