"""`kernelopt serve` as a newcomer starts it (issue 37, item 6): an unreachable database or a bad --port is one
line and exit 2, not a server that logs tracebacks or listens elsewhere; the port announced is the one
listened on. Real processes, real sockets."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.service.conftest import stop_server

REPO = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELOPT_")}
    env.update(KERNELOPT_DATA_DIR=str(tmp_path / "data"), PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1", **extra)
    return env


def serve(tmp_path: Path, *args: str, timeout: float = 60, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kernelopt.cli.main", "serve", *args], cwd=tmp_path,
                          env=_env(tmp_path, **env), capture_output=True, text=True, timeout=timeout)


def assert_one_line_refusal(proc: subprocess.CompletedProcess, start: str) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "Traceback" not in out and 'File "' not in out, out
    assert proc.stdout == "" and proc.stderr.count("\n") == 1 and proc.stderr.startswith(start), out


def test_serve_refuses_an_unreachable_database_at_once_with_one_line(tmp_path):
    t0 = time.monotonic()
    proc = serve(tmp_path, timeout=30, KERNELOPT_DATABASE_URL="postgresql+psycopg://postgres:secret@127.0.0.1:1/x")
    assert time.monotonic() - t0 < 15
    assert_one_line_refusal(proc, "kernelopt serve: cannot reach the database at "
                                  "postgresql+psycopg://postgres:***@127.0.0.1:1/x (KERNELOPT_DATABASE_URL): ")
    assert "secret" not in proc.stderr and "refused" in proc.stderr.lower(), proc.stderr
    assert not (tmp_path / "data").exists()  # nothing started, nothing created


def test_serve_refuses_a_port_outside_1_to_65535(tmp_path):
    for port in ("99999", "-1", "65536"):
        proc = serve(tmp_path, "--port", port)
        assert_one_line_refusal(proc, f"kernelopt serve: --port must be between 1 and 65535 (or 0: any free port), "
                                      f"got {port}")


def test_serve_refuses_a_port_in_use_before_it_makes_a_key(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = serve(tmp_path, "--port", str(port))
    assert_one_line_refusal(proc, f"kernelopt serve: cannot listen on 127.0.0.1:{port}: ")
    assert "ko_" not in proc.stdout + proc.stderr  # no key made and lost: the next start creates and prints it


def test_serve_on_port_0_announces_the_port_it_listens_on(tmp_path):
    log = (tmp_path / "serve.log").open("w+")
    server = subprocess.Popen([sys.executable, "-m", "kernelopt.cli.main", "serve", "--port", "0"], cwd=tmp_path,
                              env=_env(tmp_path), stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not (found := re.search(r"KernelOPT API on http://127\.0\.0\.1:(\d+) ", Path(log.name).read_text())):
            assert server.poll() is None and time.monotonic() < deadline, Path(log.name).read_text()
            time.sleep(0.1)
        port = int(found.group(1))
        assert port != 0
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2)
                break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline, Path(log.name).read_text()
                time.sleep(0.1)
        assert r.status_code == 200, r.text
        key = re.search(r"\b(ko_[A-Za-z0-9_-]{20,})\b", Path(log.name).read_text()).group(1)
        assert f"KERNELOPT_URL=http://127.0.0.1:{port} " in Path(log.name).read_text()
        jobs = httpx.get(f"http://127.0.0.1:{port}/v1/jobs", headers={"Authorization": f"Bearer {key}"}, timeout=5)
        assert jobs.status_code == 200, jobs.text
    finally:
        stop_server(server, log)
