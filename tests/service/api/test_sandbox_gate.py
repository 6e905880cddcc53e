"""`kernelopt serve` with a sandbox layer missing: refused in multi-team mode, unless the operator
opts out; /readyz says which layers are off. A missing layer is made real by pointing
KERNELOPT_SANDBOX_BWRAP at a path where no bubblewrap is (the namespaces then come from
`unshare`, and the filesystem layer is off)."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.service.api.conftest import free_port
from tests.service.api.test_embedded_serve import CLI, _env
from tests.service.conftest import stop_server

NO_BWRAP = "/nonexistent/bwrap"


def _two_teams(data: Path) -> None:
    from kernelopt.service.auth import create_team
    from kernelopt.storage.db import make_engine, make_sessionmaker, upgrade_database

    data.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{data / 'kernelopt.db'}"
    upgrade_database(url)
    engine = make_engine(url)
    with make_sessionmaker(engine)() as s:
        create_team(s, "team-a")
        create_team(s, "team-b")
        s.commit()
    engine.dispose()


def _serve(tmp_path: Path, **env) -> tuple[subprocess.Popen, str, Path]:
    port = free_port()
    log = tmp_path / "serve.log"
    proc = subprocess.Popen([sys.executable, "-c", CLI, "serve", "--port", str(port)], cwd=tmp_path,
                            env=_env(tmp_path, **env), stdout=log.open("w"), stderr=subprocess.STDOUT)
    return proc, f"http://127.0.0.1:{port}", log


def _ready(proc: subprocess.Popen, url: str, log: Path) -> httpx.Response:
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, log.read_text()
        try:
            return httpx.get(f"{url}/readyz", timeout=2)
        except httpx.TransportError:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)


def test_multi_team_serve_refuses_to_start_with_a_layer_missing(tmp_path):
    _two_teams(tmp_path / "data")
    proc, _, log = _serve(tmp_path, KERNELOPT_SANDBOX_BWRAP=NO_BWRAP)
    assert proc.wait(60) == 2
    text = log.read_text()
    assert "refusing to run jobs of several teams" in text and "filesystem" in text, text
    assert "KERNELOPT_SANDBOX_ALLOW_MISSING" in text and "Traceback" not in text


def test_an_operator_opt_out_starts_it_and_readyz_says_what_is_off(tmp_path):
    _two_teams(tmp_path / "data")
    proc, url, log = _serve(tmp_path, KERNELOPT_SANDBOX_BWRAP=NO_BWRAP, KERNELOPT_SANDBOX_ALLOW_MISSING="true")
    try:
        r = _ready(proc, url, log)
        assert r.status_code == 200, r.text
        sandbox = r.json()["checks"]["sandbox"]
        assert sandbox.startswith("degraded (operator opt-out)") and "filesystem" in sandbox, sandbox
        assert "network" not in sandbox.split("off:", 1)[1]  # unshare still gives the namespaces
        assert "sandbox (unshare): off: filesystem" in log.read_text()
    finally:
        stop_server(proc)


def test_with_every_layer_readyz_says_ok(tmp_path):
    proc, url, log = _serve(tmp_path)
    try:
        r = _ready(proc, url, log)
        assert r.status_code == 200 and r.json()["checks"]["sandbox"] == "ok: all layers (bwrap)", r.text
    finally:
        stop_server(proc)
