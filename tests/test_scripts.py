"""scripts/bootstrap as a user's first run sees it: one line per step, pip's chatter in a log.

The script runs for real in a scratch checkout whose .venv/bin/python is a stand-in
that answers like pip on a machine whose pip configuration names missing indexes
(each install prints dozens of warnings).
"""
import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

FAKE_PYTHON = """#!/usr/bin/env bash
# `-c ...` (an import check) succeeds; `-m pip ...` prints what a misconfigured pip prints.
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then
  for i in $(seq 1 84); do
    echo "WARNING: Location 'file:///opt/pypi/simple/pkg$i/' is ignored: it is neither a file nor a directory." >&2
  done
  echo "$@" >> "$(dirname "$0")/../pip-calls"
  case "$*" in *-e*) [ -n "${FAIL_INSTALL:-}" ] && { echo "ERROR: no matching distribution" >&2; exit 1; } ;; esac
fi
exit 0
"""


def _checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    for name in ("bootstrap", "sandbox-setup"):
        shutil.copy2(REPO / "scripts" / name, root / "scripts" / name)
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    python = root / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    return root


def _bootstrap(root: Path, **env) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(root / "scripts" / "bootstrap")], cwd=root, capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=60)


def test_first_run_prints_one_line_per_step_and_logs_pip(tmp_path):
    root = _checkout(tmp_path)
    proc = _bootstrap(root)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("sandbox-setup: ")]  # its own lines
    assert proc.stdout == "" and "WARNING" not in proc.stderr, proc.stderr
    assert all(line.startswith("kernelopt set-up: ") for line in lines), lines
    assert len(lines) <= 4, lines
    assert "installing kernelopt" in proc.stderr and "done" in lines[-1]
    log = (root / ".venv" / "bootstrap.log").read_text()
    assert log.count("is ignored") >= 84  # kept, for whoever wants to read it
    assert "-e .[dev,service,helion]" in (root / ".venv" / "pip-calls").read_text()
    again = _bootstrap(root)  # installed: silent and instant
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")


def test_a_failed_step_says_which_and_shows_the_log(tmp_path):
    root = _checkout(tmp_path)
    proc = _bootstrap(root, FAIL_INSTALL="1")
    assert proc.returncode == 1
    assert "kernelopt set-up: failed: installing kernelopt" in proc.stderr
    assert "ERROR: no matching distribution" in proc.stderr  # the log's tail
    assert not (root / ".venv" / ".kernelopt-installed").exists()


def test_hints_name_a_kernelopt_command_that_runs_from_here(tmp_path, monkeypatch):
    from kernelopt.cli.invocation import kernelopt_command

    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # kernelopt not on PATH (the venv not activated)
    monkeypatch.chdir(REPO)
    assert kernelopt_command() == "./scripts/kernelopt"
    monkeypatch.chdir(tmp_path)
    assert kernelopt_command() == str(REPO / "scripts" / "kernelopt")
    assert os.access(kernelopt_command(), os.X_OK)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kernelopt").write_text("#!/bin/sh\n")
    (bin_dir / "kernelopt").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))  # an activated venv, or an installed package
    assert kernelopt_command() == "kernelopt"
