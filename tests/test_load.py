"""Stage 1: bad submissions end with a clear message; good ones are described."""
import sys
from pathlib import Path

import pytest

from kernelopt.isolation import ChildError, run_in_child
from kernelopt.load.problem import ProblemError, problem_kind
from kernelopt.load.stage import LoadRequest, load_problem

BAD = Path(__file__).parent / "testdata" / "bad"
PROBLEMS = Path(__file__).parent / "testdata" / "problems"
KERNELS = Path(__file__).parent.parent / "benchmarks" / "kernels"


def _load(path: Path):
    return run_in_child(load_problem, LoadRequest(str(path), device="cpu"), timeout_s=120,
                        env={"TRITON_INTERPRET": "1"}, read_only=[path])  # as a job hands over its problem


@pytest.mark.parametrize("name, message", [
    ("import_error.py", "failed to import: ModuleNotFoundError"),
    ("forward_raises.py", "forward raised RuntimeError"),
    ("returns_non_tensor.py", "the output must be tensors"),
    ("exits.py", "SystemExit"),
])
def test_bad_submission_gets_a_clear_message(name, message):
    with pytest.raises(ChildError) as err:
        _load(BAD / name)
    assert err.value.kind == "exception"
    assert "ProblemError" in err.value.message
    assert message in err.value.message
    # the typed error itself crossed the sandbox: the job reads it, never parses the message
    assert isinstance(err.value.error, ProblemError) and message in str(err.value.error)


def test_file_without_model_or_launcher_is_refused():
    with pytest.raises(ProblemError, match="defines neither `class Model`"):
        problem_kind(BAD / "no_model.py")


def test_a_huge_problem_file_is_refused_before_it_is_parsed(tmp_path):
    """A 12 MB upload once grew the orchestrator parsing it to 4.9 GB (issue 36, item 3): past 1 MiB of source
    the file is refused by its size, with the reason, before any parse."""
    import resource

    huge = tmp_path / "huge.py"
    huge.write_text("class Model:\n    pass\n" + "x = [" + "1, " * (4 << 20) + "]\n")  # 12 MiB
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ProblemError, match=r"huge.py is 12.0 MiB: a problem file may hold at most 1 MiB"):
        problem_kind(huge)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 * 1024  # KiB: never read whole


def test_model_problem_is_described():
    result = _load(PROBLEMS / "layernorm_residual.py")
    assert result.kind == "model"
    assert result.input_shapes == [[512, 768], [512, 768]]
    assert result.output_shapes == [[512, 768]]
    assert result.deterministic is True
    assert result.parameter_count == 2 * 768


def test_nondeterministic_model_is_flagged():
    result = _load(BAD / "nondeterministic.py")
    assert result.deterministic is False
    assert any("re-seeded" in n for n in result.notes)


def test_kernel_file_is_recognised_and_checked():
    result = _load(KERNELS / "add_relu_kernel.py")
    assert result.kind == "kernel"
    assert result.output_shapes == [[1 << 16]]


def test_weights_are_loaded_into_the_model(tmp_path):
    import torch
    from safetensors.torch import save_file

    from kernelopt.load.problem import build_model, import_problem

    mod = import_problem(PROBLEMS / "linear_gelu.py")
    state = {"fc.weight": torch.full((1024, 512), 0.25), "fc.bias": torch.arange(1024, dtype=torch.float32)}
    save_file(state, tmp_path / "w.safetensors")
    model = build_model(mod, "cpu", torch.float32, weights=tmp_path / "w.safetensors")
    assert torch.equal(model.fc.weight, state["fc.weight"]) and torch.equal(model.fc.bias, state["fc.bias"])


def test_weights_that_do_not_fit_are_a_clear_error(tmp_path):
    import torch
    from safetensors.torch import save_file

    from kernelopt.load.problem import build_model, import_problem

    mod = import_problem(PROBLEMS / "linear_gelu.py")
    save_file({"fc.weight": torch.zeros(3, 3)}, tmp_path / "w.safetensors")
    with pytest.raises(ProblemError, match="the weights do not fit the model"):
        build_model(mod, "cpu", torch.float32, weights=tmp_path / "w.safetensors")
    (tmp_path / "junk.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ProblemError, match="not a readable safetensors file"):
        build_model(mod, "cpu", torch.float32, weights=tmp_path / "junk.safetensors")


def test_inputs_and_parameters_are_made_on_the_job_device(tmp_path):
    """get_inputs() and Model(...) run under torch.device(<device>): a 40 GB draw on the
    "meta" device costs nothing, so nothing was made on the CPU and then moved."""
    import torch

    from kernelopt.load.problem import build_model, import_problem, make_inputs

    path = tmp_path / "huge.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n"
        "class Model(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.proj = nn.Linear(100_000, 100_000)\n"  # 40 GB of weights
        "    def forward(self, x):\n"
        "        return self.proj(x)\n"
        "def get_inputs():\n"
        "    return [torch.randn(100_000, 100_000)]\n"  # 40 GB of input
        "def get_init_inputs():\n"
        "    return []\n")
    mod = import_problem(path)
    (x,) = make_inputs(mod, seed=0, device="meta", dtype=torch.float32)
    model = build_model(mod, "meta", torch.float32)
    assert x.device.type == "meta" and model.proj.weight.device.type == "meta"


def test_a_library_that_does_not_import_is_named_with_its_version(tmp_path, monkeypatch):
    """helion 1.5.1 on torch 2.11 (2026-12-06): the file is fine, the installed library is not; say which."""
    from kernelopt.load.problem import import_problem

    lib = tmp_path / "site-packages" / "kernelopt_test_brokenlib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("from torch import a_name_this_torch_lacks\n")
    monkeypatch.syspath_prepend(str(lib.parent))
    monkeypatch.setitem(sys.modules, "kernelopt_test_uses_lib", None)  # import_problem's entry, removed after
    problem = tmp_path / "uses_lib.py"
    problem.write_text("import kernelopt_test_brokenlib\n")
    with pytest.raises(ProblemError, match=r"uses_lib.py failed to import: kernelopt_test_brokenlib "
                                           r"\(with torch [^)]+\) raised ImportError: cannot import name"):
        import_problem(problem, module_name="kernelopt_test_uses_lib")


def test_a_cuda_refusal_where_the_device_cannot_answer_is_the_services_fault_not_get_inputs():
    """On an H100 every GPU child of a benched job inherited a 16 GiB address-space limit, CUDA's first allocation
    failed with "CUDA error: out of memory", and each job blamed get_inputs(). The driver's refusal while the
    device cannot report its memory (or has most of it free) is the service's; the allocator refusing a request
    that does not fit stays the submission's, as does any error on the CPU."""
    import torch

    from kernelopt.load.problem import device_fault

    driver = RuntimeError("CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported")

    def unusable():
        raise RuntimeError("CUDA error: out of memory")

    why = device_fault(driver, "cuda", probe=unusable)
    assert why and "cannot report the device's free memory" in why and "not the submission" in why
    assert "free: the service" in device_fault(driver, "cuda", probe=lambda: (79 << 30, 80 << 30))
    assert device_fault(driver, "cuda", probe=lambda: (1 << 30, 80 << 30)) is None  # the device is full: maybe its
    too_big = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 200.00 GiB")
    assert device_fault(too_big, "cuda", probe=unusable) is None  # the submission asked for more than there is
    assert device_fault(driver, "cpu", probe=unusable) is None
    assert device_fault(ValueError("bad shape"), "cuda", probe=unusable) is None
