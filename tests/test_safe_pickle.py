"""A child's reply is decoded as data: objects of KernelOPT's classes are rebuilt from state, never constructed
(issue 36, break 2: a reply naming `JobContext` ran its `__post_init__` in the orchestrator, which made
directories and files outside the job)."""
from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from kernelopt.compiled.graph import ArgSpec, CapturedGraph
from kernelopt.core.outcome import Outcome
from kernelopt.isolation import ChildError, run_in_child, safe_pickle
from tests import TESTS_DIR


class _ConstructsJobContext:
    """Pickles as a call of JobContext(...), whose __post_init__ makes `target` and files in it."""

    def __init__(self, target: str):
        self.target = target

    def __reduce__(self):
        from kernelopt.pipeline.context import JobContext
        from kernelopt.pipeline.options import JobOptions

        return (JobContext, (self.target, Path(self.target), JobOptions()))


def _reply_constructing(target: str):
    return _ConstructsJobContext(target)


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_engine_results_decode_in_every_protocol(protocol):
    cg = CapturedGraph("m.py", [ArgSpec("param", "w", [2], [1], "float32")], [0], "spec")
    reply = ("ok", {"captured": cg, "outcome": Outcome.OPTIMIZED, "path": Path("/x"), "n": [1, 2.5, None]})
    assert safe_pickle.loads(pickle.dumps(reply, protocol=protocol)) == reply


def test_a_reply_that_calls_a_dataclass_is_refused_and_constructs_nothing(tmp_path):
    target = tmp_path / "made-by-post-init"
    with pytest.raises(pickle.UnpicklingError, match="may not construct kernelopt.pipeline.context.JobContext"):
        safe_pickle.loads(pickle.dumps(_ConstructsJobContext(str(target))))
    assert not target.exists()


def test_a_child_whose_reply_constructs_is_a_protocol_error(tmp_path):
    target = tmp_path / "outside" / "made-by-post-init"
    with pytest.raises(ChildError) as err:
        run_in_child(_reply_constructing, str(target), timeout_s=60, read_only=TESTS_DIR)
    assert err.value.kind == "protocol" and "not a result" in err.value.message
    assert not target.exists()
