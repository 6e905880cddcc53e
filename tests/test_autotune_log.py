"""compiled/autotune_log.py: Inductor's autotune summary lines kept by the capture child, and the account read back
as data by the job, also from a capture stopped at its limit."""
from __future__ import annotations

import io
import json
import math
import sys
from pathlib import Path

import pytest

from kernelopt.compiled.autotune_log import AUTOTUNE_FILE, AutotuneSummary, AutotuneTee
from kernelopt.core.outcome import Cause
from kernelopt.pipeline.context import JobFallback
from kernelopt.pipeline.model_job import autotune_when_stopped, with_autotune_account

TESTDATA = Path(__file__).parent / "testdata" / "problems"
# as an H100 printed them (benchmarks/results/2026-12-07-h100-cudnn-helion-resnet/call3-resnet18/l3.log)
FAST = "SingleProcess AUTOTUNE benchmarking takes 0.3450 seconds and 0.0070 seconds precompiling for 10 choices\n"
SLOW = "SingleProcess AUTOTUNE benchmarking takes 97.8922 seconds and 0.0003 seconds precompiling for 18 choices\n"


def test_the_lines_are_added_up_per_shape_and_said_in_one_clause():
    s = AutotuneSummary.of(FAST + "  convolution 0.0618 ms 100.0%\n" + SLOW)
    assert s == AutotuneSummary(shapes=2, choices=28, benchmarking_s=98.2, precompiling_s=0.0, slowest_shape_s=97.9)
    assert s.describe() == "Inductor's autotuning reported 98 s over 2 shape(s), 28 choices (slowest shape 98 s)"
    assert AutotuneSummary.of("nothing tuned").describe() == ""


@pytest.mark.parametrize("bad", [None, [], {"shapes": 1}, {"shapes": True, "choices": 1, "benchmarking_s": 1,
                                                              "precompiling_s": 0, "slowest_shape_s": 1}])
def test_an_account_not_of_this_shape_is_not_read(bad):
    assert AutotuneSummary.from_dict(bad) is None


@pytest.mark.parametrize("seconds", [math.nan, math.inf, -1.0, 1e9, "12"])
def test_seconds_a_child_could_not_have_spent_are_not_read(seconds):
    data = {**AutotuneSummary.of(SLOW).to_dict(), "benchmarking_s": seconds}
    assert AutotuneSummary.from_dict(data) is None
    assert AutotuneSummary.from_dict(AutotuneSummary.of(SLOW).to_dict()) == AutotuneSummary.of(SLOW)


def test_the_tee_forwards_everything_and_keeps_the_autotune_lines_as_they_come(tmp_path, monkeypatch):
    real = io.StringIO()
    monkeypatch.setattr(sys, "stderr", real)
    progress = tmp_path / AUTOTUNE_FILE
    progress.write_text(json.dumps(AutotuneSummary.of(SLOW * 3).to_dict()))  # an earlier compile's in this directory
    with AutotuneTee(progress) as tee:
        assert sys.stderr is tee
        assert not progress.exists()  # a compile stopped before its first line says nothing, not the old account
        sys.stderr.write(FAST[:30])  # a line in pieces, as a buffered writer may hand it over
        assert not progress.exists()
        sys.stderr.write(FAST[30:] + "some other line\n")
        assert json.loads(progress.read_text())["shapes"] == 1  # written as each line comes: a kill keeps it
        print(SLOW.rstrip("\n"), file=sys.stderr)  # the last line may end without a newline
    assert sys.stderr is real
    assert real.getvalue() == FAST + "some other line\n" + SLOW
    assert tee.summary().shapes == 2 and json.loads(progress.read_text())["choices"] == 28


def test_an_unwritable_progress_file_never_fails_the_compile(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with AutotuneTee(tmp_path / "absent" / AUTOTUNE_FILE) as tee:
        sys.stderr.write(FAST)
    assert tee.summary().shapes == 1


def test_the_capture_records_what_inductor_wrote_while_it_compiled(tmp_path):
    from kernelopt.compiled.capture import CaptureRequest, capture_model

    # the graph transform runs inside Inductor's compile, where its autotune lines are written
    cg = capture_model(CaptureRequest(str(TESTDATA / "linear_gelu.py"), str(tmp_path), device="cpu"),
                       transform=lambda gm: sys.stderr.write(SLOW))
    assert AutotuneSummary.from_dict(cg.autotune) == AutotuneSummary.of(SLOW)
    assert json.loads((tmp_path / AUTOTUNE_FILE).read_text()) == cg.autotune


def test_a_compile_stopped_at_its_limit_says_what_inductor_had_autotuned(tmp_path):
    stopped = JobFallback(Cause.TIMEOUT, "compiling the model timed out: capture_model did not finish within 502 s")
    assert with_autotune_account(stopped, tmp_path) is stopped  # no account left: the cause as it was
    (tmp_path / AUTOTUNE_FILE).write_text(json.dumps(AutotuneSummary.of(FAST + SLOW).to_dict()))
    told = with_autotune_account(stopped, tmp_path)
    assert told.code is Cause.TIMEOUT
    assert str(told) == (f"{stopped}; by then Inductor's autotuning reported 98 s over 2 shape(s), 28 choices "
                         "(slowest shape 98 s)")
    crashed = JobFallback(Cause.CRASH, "compiling the model crashed")
    assert with_autotune_account(crashed, tmp_path) is crashed


def test_the_account_is_read_as_data_from_a_file_the_child_wrote(tmp_path):
    account = tmp_path / AUTOTUNE_FILE
    elsewhere = tmp_path / "service-secret.json"
    elsewhere.write_text(json.dumps(AutotuneSummary.of(SLOW).to_dict()))
    account.symlink_to(elsewhere)
    assert autotune_when_stopped(tmp_path) is None  # no link followed
    account.unlink()
    account.write_text(json.dumps({**AutotuneSummary.of(SLOW).to_dict(), "pad": "x" * 5000}))
    assert autotune_when_stopped(tmp_path) is None  # a few KB at most
    account.write_text("{not json")
    assert autotune_when_stopped(tmp_path) is None
    account.write_text(json.dumps(AutotuneSummary.of(SLOW).to_dict()))
    assert autotune_when_stopped(tmp_path) == AutotuneSummary.of(SLOW)
