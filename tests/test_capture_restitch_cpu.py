"""Capture and re-stitch on the CPU backend of Inductor (C++ kernels).

Inductor generates no Triton for the CPU, but the capture mechanism (custom
backend, real flat argument list, output map) and the re-stitch runtime are
the same code paths as on a GPU: the re-executed module must reproduce the
compiled output bit for bit, and `ModelNew` must stand in for `Model`.
"""
import importlib.util
from pathlib import Path

import pytest
import torch

from kernelopt.compiled.capture import CaptureRequest, capture_model
from kernelopt.compiled.graph import CapturedGraph
from kernelopt.compiled.restitch import ModelContext
from kernelopt.isolation import run_in_child
from kernelopt.pipeline.optimized_module import write_optimized_module
from tests import TESTS_DIR

PROBLEMS = Path(__file__).parent / "testdata" / "problems"


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    out = {}
    for name in ("linear_gelu", "layernorm_residual", "argmax_max"):
        workdir = tmp_path_factory.mktemp(name)
        out[name] = run_in_child(capture_model, CaptureRequest(str(PROBLEMS / f"{name}.py"), str(workdir),
                                                               device="cpu"), timeout_s=600, scratch=workdir, read_only=TESTS_DIR)
    return out


def test_flat_arguments_are_real_state_in_inductors_order(captured):
    cg = captured["linear_gelu"]
    assert [(a.kind, a.ref) for a in cg.args] == [("param", "fc.weight"), ("param", "fc.bias"), ("input", "0")]
    assert cg.args[0].shape == [1024, 512]
    ln = captured["layernorm_residual"]
    assert {(a.kind, a.ref) for a in ln.args} == {("input", "0"), ("input", "1"), ("param", "ln.weight"),
                                                   ("param", "ln.bias")}


def test_restitch_with_nothing_replaced_is_bit_exact(captured):
    for name, cg in captured.items():
        assert cg.restitch_bit_exact is True, name
        reloaded = CapturedGraph.load(cg.workdir)
        assert reloaded.output_map == cg.output_map


def test_restitched_module_matches_eager_for_new_seeds(captured):
    cg = captured["argmax_max"]
    ctx = ModelContext(str(PROBLEMS / "argmax_max.py"), str(cg.workdir), device="cpu")
    for seed in (5, 6):
        inputs = ctx.inputs(seed)
        values, indices = ctx.run(ctx.module(), inputs)
        ref_values, ref_indices = ctx.model(*inputs)
        assert torch.equal(indices, ref_indices)
        assert torch.allclose(values, ref_values)


def test_optimized_module_stands_in_for_model(captured, tmp_path):
    cg = captured["linear_gelu"]
    path = write_optimized_module(tmp_path / "optimized_module.py", cg, str(PROBLEMS / "linear_gelu.py"), {},
                                  "test artifact")
    spec = importlib.util.spec_from_file_location("optimized_module_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.manual_seed(0)
    reference = mod.Model(*mod.get_init_inputs())
    new = mod.ModelNew(*mod.get_init_inputs())
    new.load_state_dict(reference.state_dict())  # same parameter names as Model
    x = torch.randn(256, 512)
    with torch.no_grad():
        assert torch.allclose(new(x), reference(x), rtol=1e-5, atol=1e-5)


def test_wrong_input_shape_is_a_clear_error(captured):
    cg = captured["linear_gelu"]
    ctx = ModelContext(str(PROBLEMS / "linear_gelu.py"), str(cg.workdir), device="cpu")
    with pytest.raises(ValueError, match=r"argument input 0: expected shape \[256, 512\]"):
        ctx.flat_args([torch.randn(3, 512)])


def test_a_capture_from_an_earlier_captures_kept_caches_gives_the_same_module(tmp_path):
    """A job lent the compiler caches of an earlier one (isolation.compile_cache) compiles from them (the
    compiled C++ kernels here; the capture never takes a whole graph from Inductor's FX graph cache): the capture
    finds the output module, the same source, and re-executing it reproduces the compiled output bit for bit."""
    from kernelopt.isolation.compile_cache import lent

    slot, sources = tmp_path / "slot", []
    for i in range(2):
        workdir = tmp_path / f"job{i}"
        with lent(slot, workdir) as found:
            cg = run_in_child(capture_model, CaptureRequest(str(PROBLEMS / "linear_gelu.py"), str(workdir),
                                                            device="cpu"),
                              timeout_s=600, scratch=workdir, read_only=TESTS_DIR)
        assert (found.files > 0) == (i == 1)
        assert cg.restitch_bit_exact
        sources.append(Path(cg.module_path).read_text())
    assert sources[0] == sources[1] and "def call(" in sources[1]
