"""benchmarks/device_bench.sh: a bench cut off mid-run (a device call at its limit) still leaves its archive."""
import json
import os
import shutil
import signal
import subprocess
import tarfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_a_bench_killed_mid_run_leaves_an_archive_of_the_rows_it_finished(tmp_path):
    name = f"devbench-{uuid.uuid4().hex[:8]}"
    out = tmp_path / "out"
    env = dict(os.environ, OUT=str(out))
    env.pop("TRITON_INTERPRET", None)
    # no GPU here: each model problem ends `no-gpu` in seconds, one row at a time (45 of them: minutes)
    proc = subprocess.Popen(["benchmarks/device_bench.sh", name, "300", "--only", "level"], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        bench_json = REPO / "runs" / name / "bench.json"
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not bench_json.exists():
            time.sleep(0.2)
        assert bench_json.exists(), "the bench wrote no row"
        time.sleep(4)  # the packer looks every 2 s
        assert proc.poll() is None, "the bench ended before it was cut off: the test proves nothing"
        os.killpg(proc.pid, signal.SIGKILL)  # what a device call's limit does: nothing after it runs
        proc.wait(timeout=30)
        with tarfile.open(out / f"{name}.tgz") as tar:
            rows = json.load(tar.extractfile(f"{name}/bench.json"))["rows"]
        assert rows and all(r["result"]["outcome"] == "fallback" for r in rows), rows
        assert (out / f"{name}.md").read_text().startswith("# kernelopt bench")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(REPO / "runs" / name, ignore_errors=True)
        for leftover in (REPO / "runs").glob(f".{name}*"):
            leftover.unlink()
