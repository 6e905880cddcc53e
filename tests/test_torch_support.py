"""The supported torch range is enforced before a job starts (issue 9, item 10)."""
from __future__ import annotations

import pytest

from kernelopt.pipeline import torch_support
from kernelopt.pipeline.torch_support import SUPPORTED_TORCH, torch_refusal, torch_version_problem


@pytest.mark.parametrize("version", ["2.11.0", "2.11.0+cu130", "2.12.1", "2.13.0", "2.13.0+cpu",
                                     "2.13.0.dev20261101", "2.11.0a0+git1234abc"])
def test_versions_in_the_range_are_accepted(version):
    assert torch_version_problem(version) is None


@pytest.mark.parametrize("version", ["2.7.1", "2.7.1+cu128", "2.10.0", "2.14.0", "2.14.0a0", "3.0.0", "1.13.1"])
def test_versions_outside_the_range_are_refused_with_the_range(version):
    problem = torch_version_problem(version)
    assert problem is not None and f"torch {version} is not supported" in problem
    assert "torch 2.11–2.13" in problem


def test_no_torch_and_a_nonsense_version_are_refused():
    assert torch_version_problem(None) == "torch is not installed; KernelOPT supports torch 2.11–2.13"
    assert "not a release number" in (torch_version_problem("nightly") or "")


def test_the_installed_torch_is_read_without_importing_it_and_is_supported():
    version = torch_support.installed_torch_version()
    assert version is not None
    assert torch_version_problem(version) is None, f"this test environment's torch {version} is outside " \
        f"{SUPPORTED_TORCH}: widen the range only with a GPU run of the suite"


def test_the_refusal_is_one_line_naming_the_command():
    line = torch_refusal("kernelopt worker", version="2.7.1")
    assert line is not None and "\n" not in line
    assert line.startswith("kernelopt worker: torch 2.7.1 is not supported: KernelOPT supports torch 2.11–2.13")
    assert torch_refusal("kernelopt worker", version="2.11.0+cu130") is None


@pytest.mark.parametrize("command", [["worker"], ["optimize", "{problem}", "--workdir", "{workdir}"],
                                     ["bench", "{problems}", "--out", "{workdir}"]])
def test_commands_that_run_jobs_refuse_an_unsupported_torch_before_anything_else(
        command, tmp_path, monkeypatch, capsys):
    from kernelopt.cli.main import main

    monkeypatch.setattr(torch_support, "installed_torch_version", lambda: "2.7.1+cu128")
    problems = tmp_path / "problems"
    problems.mkdir()
    (problems / "p.py").write_text("x = 1\n")
    workdir = tmp_path / "run"
    argv = [a.format(problem=problems / "p.py", problems=problems, workdir=workdir) for a in command]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (f"kernelopt {command[0]}: torch 2.7.1+cu128 is not supported: KernelOPT supports torch "
                   "2.11–2.13 (Inductor's generated code, which capture and re-stitch read, changes between "
                   "releases)\n")
    assert not workdir.exists()  # nothing created: no runs/<name>/, no bench output
