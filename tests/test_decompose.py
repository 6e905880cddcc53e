"""Stage 3, decompose: Inductor output modules parsed statically into kernels, steps and buffers.

The captured modules are real torch 2.11 output (H200, max-autotune, no CUDA
graphs); the facts asserted about them were read off their source. None of the
captured problems has a vendor-library call (max-autotune picked Triton
templates for the GEMMs and the convolution), so library calls, aliases and the
older torch layout (module-level `call`, `grid=grid(N)`, index-keyed signature)
are covered by small hand-written modules in that format.
"""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from kernelopt.compiled.decompose import KernelGraph, decompose, library_calls

CAPTURED = Path(__file__).parent / "testdata" / "captured"
PROBLEMS = sorted(p.name for p in CAPTURED.iterdir() if (p / "baseline_module.py").exists())


def _graph(problem: str) -> KernelGraph:
    return decompose((CAPTURED / problem / "baseline_module.py").read_text())


def test_all_eight_problems_are_present():
    assert PROBLEMS == ["argmax_max", "attention_small", "conv_bn_relu", "layernorm_residual", "linear_gelu",
                        "pointwise_gelu_scale", "reduction_sum_dim", "softmax_rows"]


# -- invariants on every captured module --------------------------------------
@pytest.mark.parametrize("problem", PROBLEMS)
def test_graph_invariants(problem):
    g = _graph(problem)
    assert g.triton_steps(), "every captured module launches Triton kernels"
    assert g.graph_inputs and g.graph_outputs
    assert all(b.is_graph_output for b in (g.buffers[o] for o in g.graph_outputs))
    assert [s.index for s in g.steps] == list(range(len(g.steps)))
    assert [s.line for s in g.steps] == sorted(s.line for s in g.steps)
    assert not [s for s in g.steps if s.kind == "other"], "nothing in these modules should be unrecognised"
    for step in g.triton_steps():
        assert step.target in g.kernels
        assert step.replaceable
        assert step.writes, f"{step.target} stores somewhere"
        for name in step.reads:
            buf = g.buffers[name]
            assert buf.is_graph_input or any(p < step.index for p in buf.producers), \
                f"{step.target} reads {name} before anything produced it"
    for step in library_calls(g):
        assert not step.replaceable
    for name in g.graph_outputs:
        assert g.buffers[name].producers, f"output {name} is written by some step"
    for name in g.graph_inputs:
        assert g.buffers[name].shape is not None, "shape comes from assert_size_stride"
    json.loads(json.dumps(asdict(g)))  # plain data all the way down


@pytest.mark.parametrize("problem", PROBLEMS)
def test_fusible_group_invariants(problem):
    g = _graph(problem)
    assert len(g.fusible_groups) == len(g.fusible_group_steps)
    for names, idxs in zip(g.fusible_groups, g.fusible_group_steps, strict=True):
        assert len(idxs) >= 2
        assert names == [g.steps[i].target for i in idxs]
        members = set(idxs)
        for a, b in zip(idxs, idxs[1:], strict=False):
            between = g.steps[a + 1:b]
            assert all(s.kind == "alloc" for s in between), "only allocations may sit between members"
            links = [g.buffers[n] for n in g.steps[a].writes if n in g.steps[b].reads]
            assert any(buf.is_intermediate and members.issuperset(buf.consumers + buf.producers)
                       for buf in links), f"steps {a}->{b} are not joined by a group-internal buffer"


# -- facts read off the captured modules --------------------------------------
def test_reduction_sum_dim():
    g = _graph("reduction_sum_dim")
    (step,) = g.triton_steps()
    assert step.target == "triton_red_fused_mul_sum_0"
    assert step.numels == [256, 4096] and step.grid == []
    assert step.reads == ["arg0_1"] and step.writes == ["buf0"]
    k = g.kernels["triton_red_fused_mul_sum_0"]
    assert (k.kind, k.heuristic, k.grid_type) == ("reduction", "reduction", "Grid1D")
    assert k.size_hints == {"x": 256, "r0_": 4096}
    assert k.aten_ops == ["aten.mul", "aten.sum"] and k.source_nodes == ["mul", "sum_1"]
    assert k.arg_names == ["in_ptr0", "out_ptr0", "xnumel", "r0_numel", "XBLOCK", "R0_BLOCK"]
    assert k.constexpr_names == ["XBLOCK", "R0_BLOCK"]
    assert k.signature["in_ptr0"] == "*fp32" and k.signature["r0_numel"] == "i32"
    assert k.inductor_meta["autotune_hints"] == []  # set() made JSON-friendly
    assert k.source.lstrip().startswith("import triton") and "def triton_red_fused_mul_sum_0(" in k.source
    buf0 = g.buffers["buf0"]
    assert (buf0.shape, buf0.stride, buf0.dtype) == ([256], [1], "float32")
    assert g.graph_inputs == ["arg0_1"] and g.graph_outputs == ["buf0"]
    assert g.buffers["arg0_1"].shape == [256, 4096] and g.buffers["arg0_1"].stride == [4096, 1]
    assert g.fusible_groups == []


def test_softmax_rows_is_one_persistent_reduction():
    g = _graph("softmax_rows")
    (step,) = g.triton_steps()
    k = g.kernels[step.target]
    assert k.name == "triton_per_fused__softmax_exp_prepare_softmax_online_sub_0"
    assert (k.kind, k.heuristic) == ("persistent", "persistent_reduction")
    assert step.numels == [1024, 512] and step.writes == ["buf2"]
    assert k.aten_ops == ["prims.prepare_softmax_online", "aten.sub", "aten.exp", "aten._softmax"]
    assert k.graph_fragment.startswith('%arg0_1 : Tensor "f32[1024, 512][512, 1]cuda:0"')
    assert k.graph_fragment.splitlines()[-1] == "return %getitem,%getitem_1,%div"


def test_pointwise_gelu_scale():
    g = _graph("pointwise_gelu_scale")
    (step,) = g.triton_steps()
    k = g.kernels[step.target]
    assert (k.name, k.kind) == ("triton_poi_fused_add_gelu_mul_0", "pointwise")
    assert step.numels == [524288] and k.size_hints == {"x": 524288}
    assert k.launch_params == ["in_ptr0", "out_ptr0", "xnumel"]


def test_argmax_max_two_outputs():
    g = _graph("argmax_max")
    (step,) = g.triton_steps()
    assert step.target == "triton_red_fused_max_mul_0" and step.numels == [128, 2048]
    assert step.writes == ["buf0", "buf1"] and g.graph_outputs == ["buf0", "buf1"]
    assert g.buffers["buf1"].dtype == "int64" and g.buffers["buf0"].dtype == "float32"


def test_layernorm_residual_reads_four_inputs():
    g = _graph("layernorm_residual")
    (step,) = g.triton_steps()
    assert g.kernels[step.target].kind == "persistent"
    assert step.reads == ["arg0_1", "arg1_1", "arg2_1", "arg3_1"] and step.writes == ["buf3"]
    assert step.numels == [512, 768]


def test_linear_gelu_is_a_gemm_template():
    g = _graph("linear_gelu")
    assert not g.library_steps()
    (step,) = g.triton_steps()
    k = g.kernels[step.target]
    assert (k.name, k.kind, k.heuristic) == ("triton_tem_fused_addmm_gelu_t_0", "template", "template")
    assert k.grid_type == "FixedGrid" and k.extra_launcher_args == ["_grid_0", "_grid_1", "_grid_2"]
    # templates pass a grid (its size follows the autotuned block sizes), not numels
    assert len(step.grid) == 3 and step.grid[0] > 0 and step.grid[1:] == [1, 1] and step.numels == []
    assert "aten.addmm" in k.aten_ops
    assert step.reads == ["arg2_1", "arg0_1", "arg1_1"] and step.writes == ["buf1"]


def test_conv_bn_relu_steps_mutations_and_group():
    g = _graph("conv_bn_relu")
    assert not g.library_steps()  # max-autotune chose a Triton conv template over cuDNN here
    kinds = {k.name: k.kind for k in g.kernels.values()}
    assert kinds["triton_tem_fused_convolution_2"] == "template"
    assert kinds["triton_red_fused__native_batch_norm_legit_functional_convolution_3"] == "reduction"
    assert g.kernels["triton_poi_fused_convolution_0"].grid_type == "Grid2D"
    steps = {s.target: s for s in g.triton_steps()}
    assert len(steps) == 7
    stats = steps["triton_per_fused__native_batch_norm_legit_functional_convolution_copy__4"]
    assert {"arg4_1", "arg5_1"} <= set(stats.writes)  # running stats updated in place (copy_)
    counter = steps["triton_poi_fused_add_copy__6"]
    assert counter.reads == ["arg3_1"] and counter.writes == ["arg3_1"] and counter.numels == [1]
    assert g.fusible_groups == [[
        "triton_poi_fused_convolution_1",
        "triton_tem_fused_convolution_2",
        "triton_red_fused__native_batch_norm_legit_functional_convolution_3",
        "triton_per_fused__native_batch_norm_legit_functional_convolution_copy__4",
        "triton_poi_fused__native_batch_norm_legit_functional_convolution_relu_5",
    ]]
    assert g.buffers["buf2"].consumers == [steps[n].index for n in (
        "triton_red_fused__native_batch_norm_legit_functional_convolution_3",
        "triton_poi_fused__native_batch_norm_legit_functional_convolution_relu_5")]


def test_attention_aliases_and_in_place_softmax():
    g = _graph("attention_small")
    softmax = next(s for s in g.triton_steps() if s.target == "triton_per_fused__softmax_amax_div_mul_sub_2")
    assert softmax.args[0] == "buf4"  # `buf4 = buf1; del buf1  # reuse`
    assert softmax.reads == ["buf1"] and softmax.writes == ["buf1"]  # in_out_ptr0, resolved to the base
    assert g.kernels[softmax.target].mutated_arg_names == ["in_out_ptr0"]
    assert "buf4" in g.buffers["buf1"].aliases and "buf4" not in g.buffers
    assert g.graph_outputs == ["buf6"]  # returned through reinterpret_tensor(buf6, ...)
    assert sum(k.kind == "template" for k in g.kernels.values()) == 4
    assert len(g.fusible_groups) == 1 and len(g.fusible_groups[0]) == 5


# -- hand-written modules: library calls and the older torch layout -----------
def _kernel(name: str, params: str, sig: str, heuristic: str = "pointwise", mutated: str = "") -> str:
    return f"""
# Topologically Sorted Source Nodes: [x], Original ATen: [aten.relu]
{name} = async_compile.triton('{name}', '''
import triton
import triton.language as tl
@triton_heuristics.{heuristic}(
    size_hints=[256],
    filename=__file__,
    triton_meta={{'signature': {sig}, 'device': DeviceProperties(type='cuda', index=0), 'constants': {{}}}},
    inductor_meta={{'autotune_hints': set(), 'kernel_name': '{name}', 'mutated_arg_names': [{mutated}]}},
)
@triton.jit
def {name}({params}):
    pass
''', device_str='cuda')
"""


OLD_STYLE = (
    "from torch._inductor.select_algorithm import extern_kernels\n"
    + _kernel("triton_poi_fused_addmm_relu_0", "in_out_ptr0, in_ptr0, xnumel, XBLOCK : tl.constexpr",
              "{0: '*fp32', 1: '*fp32', 2: 'i32'}", mutated="'in_out_ptr0'")
    + _kernel("triton_poi_fused_mul_1", "in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr",
              "{0: '*fp32', 1: '*fp32', 2: 'i32'}")
    + _kernel("triton_poi_fused_add_2", "in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr",
              "{0: '*fp32', 1: '*fp32', 2: 'i32'}")
    + '''
async_compile.wait(globals())

def call(args):
    primals_1, primals_2, primals_3, primals_4 = args
    args.clear()
    assert_size_stride(primals_1, (32, 16), (16, 1))
    with torch.cuda._DeviceGuard(0):
        torch.cuda.set_device(0)
        buf0 = empty_strided_cuda((8, 32), (32, 1), torch.float32)
        extern_kernels.mm(primals_3, reinterpret_tensor(primals_1, (16, 32), (1, 16), 0), out=buf0)
        del primals_1
        buf1 = buf0; del buf0  # reuse
        stream0 = get_raw_stream(0)
        triton_poi_fused_addmm_relu_0.run(buf1, primals_2, 256, grid=grid(256), stream=stream0)
        buf2 = extern_kernels.convolution(reinterpret_tensor(buf1, (8, 32, 1, 1), (32, 1, 1, 1), 0), primals_4, stride=(1, 1), padding=(0, 0), dilation=(1, 1), transposed=False, output_padding=(0, 0), groups=1, bias=None)
        buf3 = empty_strided_cuda((8, 32), (32, 1), torch.float32)
        triton_poi_fused_mul_1.run(buf2, buf3, 256, grid=grid(256), stream=stream0)
        buf4 = empty_strided_cuda((8, 32), (32, 1), torch.float32)
        triton_poi_fused_add_2.run(buf3, buf4, 256, grid=grid(256), stream=stream0)
        torch.ops.aten.copy_.default(primals_2, buf4)
        something_new(buf4, mode=3)
    return (reinterpret_tensor(buf4, (8, 32, 1, 1), (32, 1, 1, 1), 0), buf1, )
''')


def test_old_style_module_library_calls_and_aliases():
    g = decompose(OLD_STYLE)
    assert g.graph_inputs == ["primals_1", "primals_2", "primals_3", "primals_4"]
    assert [s.kind for s in g.steps] == ["alloc", "library", "triton", "library", "alloc", "triton", "alloc",
                                         "triton", "library", "other"]
    mm, conv, copy = g.library_steps()
    assert mm.target == "extern_kernels.mm" and mm.writes == ["buf0"] and mm.reads == ["primals_3", "primals_1"]
    assert mm.kwargs == {"out": "buf0"}
    assert conv.target == "extern_kernels.convolution" and conv.defines == ["buf2"] and conv.writes == ["buf2"]
    assert conv.reads == ["buf0", "primals_4"]  # buf1 is buf0 (reuse); reinterpret_tensor is a view
    assert conv.kwargs["stride"] == "(1, 1)"
    assert copy.target == "torch.ops.aten.copy_.default" and copy.writes == ["primals_2"]
    assert not any(s.replaceable for s in library_calls(g))
    relu = g.triton_steps()[0]
    assert relu.reads == ["buf0", "primals_2"] and relu.writes == ["buf0"]
    assert relu.numels == [256] and relu.kwargs["grid"] == "grid(256)"
    k = g.kernels["triton_poi_fused_addmm_relu_0"]
    assert k.signature == {"in_out_ptr0": "*fp32", "in_ptr0": "*fp32", "xnumel": "i32"}  # from index keys
    assert k.size_hints == {"0": 256} and k.aten_ops == ["aten.relu"] and k.source_nodes == ["x"]
    assert g.graph_outputs == ["buf4", "buf0"]
    other = g.steps[-1]
    assert other.target == "something_new" and other.reads == ["buf4"] and not other.replaceable
    # mul_1 -> add_2 through buf3 (intermediate); the conv and the copy_ bound the run.
    assert g.fusible_groups == [["triton_poi_fused_mul_1", "triton_poi_fused_add_2"]]


def test_escaping_buffer_cuts_a_group():
    src = OLD_STYLE.replace("torch.ops.aten.copy_.default(primals_2, buf4)",
                            "torch.ops.aten.copy_.default(primals_2, buf3)")
    g = decompose(src)
    assert g.buffers["buf3"].consumers == [7, 8]  # add_2 and the library copy_
    assert g.fusible_groups == []


def test_output_buffer_does_not_link():
    src = OLD_STYLE.replace("return (reinterpret_tensor(buf4,", "return (buf3, reinterpret_tensor(buf4,")
    assert decompose(src).fusible_groups == []


def test_unexpected_statements_are_recorded_not_fatal():
    src = OLD_STYLE.replace("        something_new(buf4, mode=3)\n",
                            "        x = 1 + buf4.sum()\n        buf4.zero_()\n        for i in range(2):\n"
                            "            print(i)\n")
    g = decompose(src)
    others = [s for s in g.steps if s.kind == "other"]
    assert [o.args[0] for o in others] == ["x = 1 + buf4.sum()", "buf4.zero_()", "print(i)"]
    assert others[1].writes == ["buf4"]  # in-place method on a buffer


def test_no_call_is_a_clear_error():
    with pytest.raises(ValueError, match="no call"):
        decompose("import torch\nx = 1\n")
    with pytest.raises(ValueError, match="not a Python module"):
        decompose("def call(args:\n")
