"""Capture finds the model's own output module, and a valid model it cannot take apart falls back."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from kernelopt.compiled.capture import CaptureRequest, capture_model, output_module_source
from kernelopt.isolation import ChildError, run_in_child
from kernelopt.load.problem import UnsupportedGraph
from tests import TESTS_DIR

PROBLEMS = Path(__file__).parent / "testdata" / "problems"
MODULE = "import torch\n\ndef call(args):\n    return args\n"
BENCH = "import torch\n\ndef benchmark_subgraph():\n    pass\n"


def test_the_graphs_own_module_is_chosen_among_autotuning_modules():
    # The compiled graph names its own module ...
    assert output_module_source(SimpleNamespace(source_code=MODULE), [BENCH, "x", BENCH]) == MODULE
    # ... and without that, the last module saved while it compiled that defines `call`.
    assert output_module_source(SimpleNamespace(), [BENCH, MODULE, BENCH]) == MODULE
    assert output_module_source(SimpleNamespace(), [BENCH]) is None


def test_a_graph_break_is_a_fallback_cause_not_a_bad_submission(tmp_path):
    with pytest.raises(ChildError) as err:
        run_in_child(capture_model, CaptureRequest(str(PROBLEMS / "graph_break.py"), str(tmp_path), device="cpu"),
                     timeout_s=600, scratch=tmp_path, env={"TRITON_INTERPRET": "1"}, read_only=TESTS_DIR)
    assert isinstance(err.value.error, UnsupportedGraph), err.value  # the typed error, as raised in the child
    assert err.value.error.code == "graph-break" and "one graph" in err.value.error.reason


def test_seeded_reproduction_tells_randomness_nondeterminism_and_a_wrong_module_apart():
    import torch

    from kernelopt.compiled.capture import _seeded_reproduction
    from kernelopt.compiled.graph import Reproduction

    # a model drawing random numbers: seeded alike, the module is the compiled model bit for bit
    assert _seeded_reproduction(lambda: torch.rand(8), lambda: torch.rand(8))[0] is Reproduction.BIT_EXACT
    calls = iter(range(100))
    noisy = lambda: torch.ones(8) * (1 + 1e-6 * (next(calls) % 4))  # noqa: E731
    verdict, spread = _seeded_reproduction(noisy, noisy)
    assert verdict is Reproduction.WITHIN_NONDETERMINISM and 1e-6 <= spread <= 3.1e-6
    # the compiled model reproduces itself; the module does not: not the same code
    verdict, spread = _seeded_reproduction(lambda: torch.ones(8), lambda: torch.ones(8) * 1.001)
    assert verdict is Reproduction.NO and spread == 0.0
    # a module off by far more than the compiled model's own spread
    calls = iter(range(100))
    assert _seeded_reproduction(noisy, lambda: torch.ones(8) * 1.1)[0] is Reproduction.NO


def test_a_nondeterministic_library_call_is_measured_and_verified_against(tmp_path):
    """Issue 9, item 3: a baseline that does not reproduce itself bit for bit is no crash."""
    from kernelopt.pipeline.report import nondeterminism_note

    cg = run_in_child(capture_model, CaptureRequest(str(PROBLEMS / "nondeterministic_op.py"), str(tmp_path),
                                                    device="cpu"),
                      timeout_s=600, scratch=tmp_path, env={"TRITON_INTERPRET": "1"}, read_only=TESTS_DIR)
    assert "order_dependent_scale" in Path(cg.module_path).read_text()
    assert cg.restitch_bit_exact is False and cg.reproduction == "within-nondeterminism"
    assert 0 < cg.restitch_max_abs_diff <= 2 * cg.nondeterminism_max_abs_diff < 1e-3
    note = nondeterminism_note(cg.__dict__)
    assert note and "not deterministic" in note and f"{cg.nondeterminism_max_abs_diff:.3g}" in note
    det = run_in_child(capture_model, CaptureRequest(str(PROBLEMS / "linear_relu_small.py"), str(tmp_path / "d"),
                                                     device="cpu"),
                       timeout_s=600, scratch=tmp_path / "d", env={"TRITON_INTERPRET": "1"}, read_only=TESTS_DIR)
    assert det.restitch_bit_exact is True and det.reproduction == "bit-exact"
    assert nondeterminism_note(det.__dict__) is None
    # the math modes the baseline's library calls ran under are recorded (PyTorch's defaults here)
    assert det.library_math == {"cuda.matmul.allow_tf32": False, "cudnn.allow_tf32": True,
                                "float32_matmul_precision": "highest",
                                "cuda.matmul.allow_bf16_reduced_precision_reduction": True,
                                "cuda.matmul.allow_fp16_reduced_precision_reduction": True}
