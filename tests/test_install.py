"""A non-editable install works on its own: migrations and prompts are package data, and the
sandbox binds the installed packages (not the checkout) into its children."""
from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The checkout installed once, not editable (`pip install --target`), for the tests below."""
    base = tmp_path_factory.mktemp("installed")
    os.chmod(base, 0o755)  # the sandbox uid reads the installed packages from here
    target = base / "site"
    build = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                            str(ROOT)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    return target


def test_a_non_editable_install_runs_sandboxed_children_and_migrates(installed, tmp_path):
    target = installed
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
    os.chmod(tmp_path, 0o755)  # the sandbox uid works in here
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(target)}
    run = subprocess.run([sys.executable, "-c", PROBE, str(target), str(work / "k.db")], cwd=work, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert "layers []" in run.stdout and "child " in run.stdout, run.stdout
    assert (work / "k.db").is_file()


def test_one_package_directory_and_links_into_it():
    """pyproject says what the package is (everything under kernelopt/); the checkout's other folders are not
    packages of the distribution, and the design card's top-level folders are relative links into kernelopt/."""
    import tomllib

    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "package-dir" not in cfg and cfg["packages"]["find"]["include"] == ["kernelopt", "kernelopt.*"]
    top_packages = sorted(p.parent.name for p in ROOT.glob("*/__init__.py") if not p.parent.is_symlink())
    assert top_packages == ["benchmarks", "kernelopt", "tests"]
    for name in ("api", "worker", "agents", "verify", "migrations"):
        link = ROOT / name
        assert link.is_symlink() and os.readlink(link) == f"kernelopt/{name}", name
        assert link.resolve() == (ROOT / "kernelopt" / name).resolve()
    assert (ROOT / "tests").is_dir() and not (ROOT / "tests").is_symlink()
    assert (ROOT / "deploy").is_dir() and not (ROOT / "deploy").is_symlink()
    # the package's search path is its own directory: the checkout's other folders are no subpackages of it
    assert [importlib.util.find_spec(f"kernelopt.{n}") for n in ("tests", "benchmarks", "kernelopt", "scripts")] \
        == [None] * 4


def test_kernelopt_serve_from_an_installed_copy_migrates_and_is_ready(installed, tmp_path):
    """`pip install .` (not editable), then `kernelopt serve` started from another directory: it runs the
    migrations from the installed package data and answers /readyz."""
    import socket
    import time
    import urllib.request

    target = installed
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELOPT_") and k != "PYTHONPATH"}
    env |= {"PYTHONPATH": str(target), "KERNELOPT_DATA_DIR": str(tmp_path / "data")}
    server = subprocess.Popen([sys.executable, "-m", "kernelopt.cli.main", "serve", "--port", str(port)],
                              cwd=elsewhere, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline, answer = time.monotonic() + 120, None
        while time.monotonic() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as resp:
                    answer = (resp.status, resp.read().decode())
                    break
            except OSError:
                time.sleep(0.5)
        assert answer is not None and answer[0] == 200, f"no /readyz answer; exit {server.poll()}"
        assert json.loads(answer[1])["status"] == "ready", answer
        databases = list((tmp_path / "data").rglob("*.db"))
        assert len(databases) == 1, databases
        with sqlite3.connect(databases[0]) as db:  # migrated to head from the installed package data
            assert db.execute("SELECT version_num FROM alembic_version").fetchall()
    finally:
        server.terminate()
        try:
            server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate()


def test_the_embedded_model_default_is_the_suites_level2_01():
    """kernelopt/examples ships with the package; its model is the suite's, kept identical."""
    shipped = ROOT / "kernelopt" / "examples" / "linear_bias_gelu.py"
    suite = ROOT / "benchmarks" / "problems" / "level2" / "01_linear_bias_gelu.py"
    assert shipped.read_text() == suite.read_text()
