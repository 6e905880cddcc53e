"""Capture finds the model's own output module, and a valid model it cannot take apart falls back."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from compiled.capture import CaptureRequest, capture_model, output_module_source
from isolation import ChildError, run_in_child

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
                     timeout_s=600, scratch=tmp_path, env={"TRITON_INTERPRET": "1"})
    assert err.value.exc_type == "UnsupportedGraph", err.value
    assert err.value.message.startswith("UnsupportedGraph: graph-break: "), err.value.message
