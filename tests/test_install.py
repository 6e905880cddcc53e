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
import sys
from kernelopt import isolation
assert isolation.__file__.startswith(sys.argv[1] + '/kernelopt/isolation'), isolation.__file__
upgrade_database('sqlite:///' + sys.argv[2])
print('layers', sandbox_layers().off())
print('child', run_in_child(probe, None, timeout_s=120).torch_version)
"""


def test_a_non_editable_install_runs_sandboxed_children_and_migrates(tmp_path):
    target = tmp_path / "site"
    build = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                            str(ROOT)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    pkg = target / "kernelopt"
    assert (pkg / "migrations" / "versions" / "0001_initial_schema.py").is_file()
    assert (pkg / "migrations" / "script.py.mako").is_file()
    assert list((pkg / "agents" / "prompts").glob("*.md"))
    assert (pkg / "examples" / "row_softmax_kernel.py").is_file() and (pkg / "api" / "ui" / "templates").is_dir()
    # one namespace: nothing of ours beside it at site-packages' top level, no benchmarks or tests
    assert sorted(p.name for p in target.iterdir() if not p.name.endswith((".dist-info", ".egg-info"))) \
        == ["bin", "kernelopt"] or sorted(p.name for p in target.iterdir()
                                          if not p.name.endswith((".dist-info", ".egg-info"))) == ["kernelopt"]
    assert not (pkg / "benchmarks").exists() and not (pkg / "tests").exists()
    os.chmod(tmp_path, 0o755)  # the sandbox uid reads the installed packages from here
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(target)}
    run = subprocess.run([sys.executable, "-c", PROBE, str(target), str(work / "k.db")], cwd=work, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert "layers []" in run.stdout and "child " in run.stdout, run.stdout
    assert (work / "k.db").is_file()


def test_the_package_list_names_every_folder_of_the_checkout():
    """pyproject.toml lists kernelopt's subpackages explicitly (a folder maps to kernelopt.<folder>)."""
    import tomllib

    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    on_disk = {"kernelopt"} | {
        "kernelopt." + ".".join(init.parent.relative_to(ROOT).parts)
        for top in cfg["package-dir"].values() if top != "kernelopt"
        for init in (ROOT / top).rglob("__init__.py") if "__pycache__" not in init.parts
    }
    assert listed == on_disk
    assert all(cfg["package-dir"][f"kernelopt.{top}"] == top for top in (p.split(".")[1] for p in listed if
                                                                          p.count(".") == 1))


def test_the_embedded_model_default_is_the_suites_level2_01():
    """kernelopt/examples ships with the package; its model is the suite's, kept identical."""
    shipped = ROOT / "kernelopt" / "examples" / "linear_bias_gelu.py"
    suite = ROOT / "benchmarks" / "problems" / "level2" / "01_linear_bias_gelu.py"
    assert shipped.read_text() == suite.read_text()
