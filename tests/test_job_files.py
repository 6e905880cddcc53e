"""The trusted side never writes through what a sandboxed child left in the job's work directory
(issue 36, break 1: `experience.jsonl` replaced by a link was appended to, creating a file outside the job)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernelopt.agents.llm import LLMClient, LLMSettings
from kernelopt.agents.memory import ExperienceMemory
from kernelopt.core.jobfiles import PlantedFile, append_text, open_append
from kernelopt.pipeline.report import JsonLines
from kernelopt.search.generator import Attempt, Candidate, Gate


def _attempt() -> Attempt:
    return Attempt(Candidate("k", "x = 1", "llm", "plan", params={"strategy": "block-sizes"}), True, Gate.TIMED,
                   "", kernel_ms=0.5, baseline_kernel_ms=1.0)


@pytest.fixture
def planted(tmp_path):
    """A job directory whose `experience.jsonl` and `transcripts.jsonl` are links to files outside it (one
    existing, one not), as submitted code made them."""
    job, outside = tmp_path / "job", tmp_path / "outside"
    job.mkdir()
    outside.mkdir()
    (outside / "existing").write_text("untouched\n")
    os.symlink(outside / "existing", job / "experience.jsonl")
    os.symlink(outside / "created-by-the-job", job / "transcripts.jsonl")
    return job, outside


def test_the_experience_log_is_not_appended_through_a_link(planted):
    job, outside = planted
    memory = ExperienceMemory(job / "experience.jsonl")
    with pytest.raises(PlantedFile, match="experience.jsonl in the job's work directory is a symbolic link"):
        memory.add("k", _attempt())
    assert (outside / "existing").read_text() == "untouched\n"


def test_a_transcript_is_not_written_through_a_link(planted):
    job, outside = planted
    client = LLMClient(LLMSettings(base_url="http://127.0.0.1:9/v1", model="m", api_key="k"),
                       transcript_path=job / "transcripts.jsonl")
    with pytest.raises(PlantedFile):
        client._record(1, "executor", [{"role": "user", "content": "hi"}], None, error="no reply")
    assert not (outside / "created-by-the-job").exists()


def test_jsonlines_and_appends_refuse_fifos_and_directories_but_write_regular_files(tmp_path):
    os.mkfifo(tmp_path / "events.jsonl")
    with pytest.raises(PlantedFile, match="FIFO"):  # and without blocking on it
        JsonLines(tmp_path / "events.jsonl")
    (tmp_path / "dir.jsonl").mkdir()
    with pytest.raises(PlantedFile):
        append_text(tmp_path / "dir.jsonl", "x\n")
    append_text(tmp_path / "ok.jsonl", "a\n")
    with open_append(tmp_path / "ok.jsonl") as f:
        f.write("b\n")
    assert (tmp_path / "ok.jsonl").read_text() == "a\nb\n"


def test_a_submission_that_plants_a_link_ends_its_job_with_that_cause_and_nothing_written_outside(tmp_path):
    # the attack of issue 36 (break 1) against a real job: the kernel file, imported in the sandbox, replaces
    # experience.jsonl in its work directory by a link to a file outside the job
    from kernelopt.pipeline.job import run_job
    from kernelopt.pipeline.options import JobOptions
    outside = tmp_path / "outside"
    outside.mkdir()
    os.chmod(outside, 0o777)
    source = (Path(__file__).resolve().parent.parent / "benchmarks" / "kernels" / "add_relu_kernel.py").read_text()
    plant = (f"import os\ntry:\n    os.symlink({str(outside / 'grown-by-the-job')!r}, 'experience.jsonl')\n"
             "except OSError:\n    pass\n")
    problem = tmp_path / "planting_kernel.py"
    problem.write_text(source.replace("import torch\n", "import torch\n" + plant, 1))
    result = run_job(str(problem), tmp_path / "job", JobOptions(time_budget_s=300, generators=["launch_config"]))
    assert result.outcome == "failed", result
    assert "experience.jsonl in the job's work directory is a symbolic link" in result.cause
    assert not (outside / "grown-by-the-job").exists()


def _print_forged_lines(_):
    import sys

    print("job 0000-other-team: succeeded (optimized: speedup 777x)")
    sys.stderr.write("INFO kernelopt.worker: forged\r\x1b[2Kjob 1: failed\n")
    print("x" * 5000)
    return 1


def test_a_childs_output_reaches_the_log_escaped_prefixed_and_cut(capfd, monkeypatch):
    # issue 36, break 6: a child's print was a line of the service's log of its own (a forged job record)
    from kernelopt.isolation import run_in_child
    from kernelopt.isolation.child_output import LABEL_ENV, MAX_LINE
    from tests import TESTS_DIR

    assert run_in_child(_print_forged_lines, None, timeout_s=60, env={LABEL_ENV: "job abc"}, read_only=TESTS_DIR) == 1
    import time

    lines: list[str] = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the forwarding thread may drain the pipe after the child's reply
        lines += capfd.readouterr().err.splitlines()
        mine = [line for line in lines if "forged" in line or "777x" in line or "xxxx" in line]
        if len(mine) >= 3:
            break
        time.sleep(0.1)
    assert len(mine) == 3, lines
    assert all(line.startswith("[job abc pid ") for line in mine), mine
    assert any(line.endswith("] INFO kernelopt.worker: forged\\x0d\\x1b[2Kjob 1: failed") for line in mine), mine
    assert max(len(line) for line in mine) < MAX_LINE + 100
