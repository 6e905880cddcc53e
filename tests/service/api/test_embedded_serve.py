"""`kernelopt serve` with nothing configured (SQLite + in-process dispatcher, migrated at start,
a default team and key printed), then `kernelopt submit --wait --download` of a single-kernel
file that runs on the Triton interpreter: real processes, real HTTP, the real engine."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.service.api.conftest import free_port
from tests.service.conftest import stop_server

REPO = Path(__file__).resolve().parents[3]
KERNEL = REPO / "benchmarks" / "kernels" / "add_relu_kernel.py"
MODEL = REPO / "tests" / "testdata" / "problems" / "linear_gelu.py"
NO_GPU_NOTE = "no GPU: the Triton interpreter checks correctness only"
CLI = ("import sys, argparse\n"
       "from kernelopt.cli import serve, submit\n"
       "p = argparse.ArgumentParser(prog='kernelopt'); sub = p.add_subparsers(dest='command', required=True)\n"
       "serve.register(sub); submit.register(sub)\n"
       "a = p.parse_args(sys.argv[1:]); sys.exit(a.func(a))\n")


def _env(tmp_path: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELOPT_")}
    env.update(KERNELOPT_DATA_DIR=str(tmp_path / "data"), PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1", **extra)
    return env


def test_embedded_serve_then_submit_wait_download(tmp_path):
    port = free_port()
    log = (tmp_path / "serve.log").open("w+")
    server = subprocess.Popen([sys.executable, "-c", CLI, "serve", "--port", str(port)], cwd=tmp_path,
                              env=_env(tmp_path), stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, Path(log.name).read_text()
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, Path(log.name).read_text()
            time.sleep(0.2)
        banner = Path(log.name).read_text()
        assert (tmp_path / "data" / "kernelopt.db").is_file()
        key = re.search(r"\b(ko_[A-Za-z0-9_-]{20,})\b", banner).group(1)
        # The hint names a command that runs from here: `kernelopt` only where it is on PATH.
        hint = re.search(r"^ +(\S+) submit model\.py", banner, re.M).group(1)
        assert shutil.which(hint, path=_env(tmp_path)["PATH"]) or (tmp_path / hint).is_file(), banner

        out = tmp_path / "out"
        done = subprocess.run([sys.executable, "-c", CLI, "submit", str(KERNEL), "--wait", "--download", str(out),
                               "--json", "--options", '{"time_budget_s": 240}', "--timeout", "420"],
                              cwd=tmp_path, env=_env(tmp_path, KERNELOPT_URL=url, KERNELOPT_API_KEY=key),
                              capture_output=True, text=True, timeout=480)
        job = json.loads(done.stdout)
        detail = f"exit {done.returncode}\n{done.stderr}\n{json.dumps(job, indent=1)}\n{Path(log.name).read_text()[-3000:]}"
        assert job["status"] == "succeeded", detail
        assert job["outcome"] == "fallback" and job["cause"].startswith("no-gpu"), detail
        from kernelopt.cli.submit import exit_code_for
        assert done.returncode == exit_code_for(job), detail
        assert "load" in done.stderr  # progress followed over SSE
        # No GPU here: no speed anywhere — job record, submit's output, the report, the team's stats.
        assert [job[k] for k in ("speedup", "baseline_ms", "optimized_ms", "noise_pct")] == [None] * 4, detail
        assert job["timing"] == "not-measured" and job["timing_note"] == NO_GPU_NOTE, detail
        assert f"outcome fallback, speed not measured ({NO_GPU_NOTE}) — no-gpu" in done.stderr, detail
        assert "speedup" not in done.stderr and "] :" not in done.stderr, detail
        names = {a["name"] for a in httpx.get(f"{url}/v1/jobs/{job['id']}/artifacts",
                                               headers={"Authorization": f"Bearer {key}"}).json()["items"]}
        assert "report.json" in names, names
        for name in names:
            assert (out / name).is_file(), name
        report_md = (out / "report.md").read_text()
        assert f"Speed: not measured ({NO_GPU_NOTE})" in report_md and "None" not in report_md, report_md
        assert "1.000x" not in report_md, report_md

        # A model file without a GPU: fallback no-gpu at once, not failed, nothing loaded.
        model = subprocess.run([sys.executable, "-c", CLI, "submit", str(MODEL), "--wait", "--json",
                                "--timeout", "120"], cwd=tmp_path, capture_output=True, text=True, timeout=180,
                               env=_env(tmp_path, KERNELOPT_URL=url, KERNELOPT_API_KEY=key))
        mjob = json.loads(model.stdout)
        assert model.returncode == 0, model.stderr
        assert mjob["status"] == "succeeded" and mjob["outcome"] == "fallback", mjob
        assert mjob["cause"].startswith("no-gpu: model mode needs a CUDA GPU") and mjob["speedup"] is None, mjob
        stats = httpx.get(f"{url}/v1/stats", headers={"Authorization": f"Bearer {key}"}).json()
        assert stats["finished"] == 2 and stats["measured"] == 0 and stats["not_measured"] == 2, stats
        assert stats["geomean_speedup"] is None, stats
        # a restart keeps the data and does not create another team
        server.terminate()
        server.wait(20)
        log.seek(0)
        log.truncate()
        server = subprocess.Popen([sys.executable, "-c", CLI, "serve", "--port", str(port)], cwd=tmp_path,
                                  env=_env(tmp_path), stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                r = httpx.get(f"{url}/v1/jobs/{job['id']}", headers={"Authorization": f"Bearer {key}"}, timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and server.poll() is None, Path(log.name).read_text()
                time.sleep(0.2)
        assert r.status_code == 200 and r.json()["status"] == "succeeded"
        assert "ko_" not in Path(log.name).read_text()
    finally:
        stop_server(server, log)
