"""A non-editable install works on its own: migrations and prompts are package data, and the
sandbox binds the installed packages (not the checkout) into its children."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
from kernelopt.isolation import run_in_child, sandbox_layers
from kernelopt.pipeline.device import probe
from kernelopt.storage.db import upgrade_database
import isolation, sys
assert isolation.__file__.startswith(sys.argv[1]), isolation.__file__
upgrade_database('sqlite:///' + sys.argv[2])
print('layers', sandbox_layers().off())
print('child', run_in_child(probe, None, timeout_s=120).torch_version)
"""


def test_a_non_editable_install_runs_sandboxed_children_and_migrates(tmp_path):
    target = tmp_path / "site"
    build = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                            str(ROOT)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    assert (target / "migrations" / "versions" / "0001_initial_schema.py").is_file()
    assert (target / "migrations" / "script.py.mako").is_file()
    assert list((target / "agents" / "prompts").glob("*.md"))
    os.chmod(tmp_path, 0o755)  # the sandbox uid reads the installed packages from here
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(target)}
    run = subprocess.run([sys.executable, "-c", PROBE, str(target), str(work / "k.db")], cwd=work, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert "layers []" in run.stdout and "child " in run.stdout, run.stdout
    assert (work / "k.db").is_file()
