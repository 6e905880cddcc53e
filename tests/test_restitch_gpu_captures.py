"""Re-stitch planning on modules captured on the H200 (no GPU needed to build them).

Running these modules needs CUDA (tests/test_gpu_engine.py does, bit-exact); here the
artifact built from a real capture with a real generated candidate must be a valid,
self-contained module that swaps exactly that kernel.
"""
import ast
import runpy
from pathlib import Path

from kernelopt.compiled.decompose import decompose
from kernelopt.compiled.graph import CapturedGraph
from kernelopt.pipeline.model_job import _target
from kernelopt.pipeline.optimized_module import write_optimized_module
from kernelopt.search.generators.launch_config import LaunchConfigGenerator

DATA = Path(__file__).parent / "testdata"


def test_captures_record_their_toolchain_and_pinned_configs():
    for d in sorted((DATA / "captured").iterdir()):
        cg = CapturedGraph.load(d)
        assert cg.torch_version.startswith("2.11") and cg.device_name == "NVIDIA H200", d.name
        assert cg.restitch_bit_exact is True, d.name
        graph = decompose(Path(cg.module_path).read_text())
        assert set(graph.kernels) <= set(cg.kernel_configs), d.name


def test_optimized_module_from_a_gpu_capture_swaps_one_kernel(tmp_path):
    cg = CapturedGraph.load(DATA / "captured" / "reduction_sum_dim")
    graph = decompose(Path(cg.module_path).read_text())
    target = _target(cg, graph, "triton_red_fused_mul_sum_0", 1.0)
    (candidate,) = LaunchConfigGenerator().propose(target, [], [], 1)
    path = write_optimized_module(tmp_path / "optimized_module.py", cg,
                                  str(DATA / "problems" / "reduction_sum_dim.py"),
                                  {target.name: candidate.source}, "test")
    source = path.read_text()
    ast.parse(source)
    namespace = runpy.run_path(str(path), run_name="not_main")  # defines, runs nothing on a device
    assert set(namespace["_REPLACEMENTS"]) == {"triton_red_fused_mul_sum_0"}
    assert namespace["_KERNEL_CONFIGS"] == cg.kernel_configs
    assert namespace["_OUTPUT_MODULE_SOURCE"] == Path(cg.module_path).read_text()
    assert issubclass(namespace["ModelNew"], namespace["Model"])
    ast.parse(namespace["_REPLACEMENTS"]["triton_red_fused_mul_sum_0"])
