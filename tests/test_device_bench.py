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
    # no GPU here: each model problem ends `no-gpu` in seconds, one row at a time (53 of them: minutes)
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
        _remove_run(name)


def test_a_bench_stopped_at_its_time_returns_then_not_when_its_job_in_flight_would_end(tmp_path):
    # The stopped bench's job process (its own session) keeps running and writing the output it inherited;
    # the script must kill it when the time is up, not wait for it (a device call overran its limit so).
    name = f"devbench-{uuid.uuid4().hex[:8]}"
    problems = tmp_path / "problems" / "level1"
    problems.mkdir(parents=True)
    # a kernel file (it runs on the Triton interpreter here; a model file ends no-gpu before loading) whose
    # inputs take 90 s to make
    kernel = (REPO / "benchmarks" / "kernels" / "add_relu_kernel.py").read_text()
    (problems / "01_slow_inputs.py").write_text(kernel.replace(
        "def get_inputs():\n", "def get_inputs():\n    import time\n    print('making the inputs', flush=True)\n"
        "    time.sleep(90)\n"))
    env = dict(os.environ, OUT=str(tmp_path / "out"), KERNELOPT_BENCH_PROBLEMS=str(problems.parent))
    env.pop("TRITON_INTERPRET", None)
    t0 = time.monotonic()
    proc = subprocess.run(["benchmarks/device_bench.sh", name, "20"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=240)
    took = time.monotonic() - t0
    try:
        assert took < 60, f"the script waited {took:.0f} s for the job it had stopped"
        alive = _marked(name)
        assert not alive, f"processes of the stopped bench still run: {alive}"
        assert (tmp_path / "out" / f"{name}.log").exists() and proc.returncode == 0, proc.stdout + proc.stderr
        # the job it stopped had its sandbox's HOME and caches in its workdir: the archive leaves them out
        workdir = REPO / "runs" / name / "level1" / "01_slow_inputs"
        assert (workdir / ".home").is_dir() or (workdir / ".cache").is_dir(), "the test proves nothing"
        with tarfile.open(tmp_path / "out" / f"{name}.tgz") as tar:
            members = tar.getnames()
        assert f"{name}/level1/01_slow_inputs" in members
        assert not [m for m in members if "/.home" in m or "/.cache" in m], members
    finally:
        for pid in _marked(name):  # a failing script leaves its job running: not past this test
            os.kill(int(pid), signal.SIGKILL)
        _remove_run(name)


def _marked(name: str) -> list[str]:
    """PIDs of the processes of device_bench.sh run `name` (its marker, KERNELOPT_BENCH_RUN, in their environment)."""
    marker = f"KERNELOPT_BENCH_RUN={name}.".encode()
    pids = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if marker in environ.read_bytes():
                pids.append(environ.parent.name)
        except OSError:
            continue
    return pids


def _remove_run(name: str) -> None:
    """What a device_bench.sh run leaves in runs/: its folder and the packer's hidden files."""
    shutil.rmtree(REPO / "runs" / name, ignore_errors=True)
    for leftover in (REPO / "runs").glob(f".{name}*"):
        leftover.unlink()


def test_given_an_earlier_runs_times_the_script_starts_only_what_fits_its_seconds(tmp_path):
    name = f"devbench-{uuid.uuid4().hex[:8]}"
    problems = tmp_path / "problems" / "level1"
    problems.mkdir(parents=True)
    model = (REPO / "benchmarks" / "problems" / "level1" / "01_gelu_tanh.py").read_text()
    for stem in ("01_first", "02_second"):
        (problems / f"{stem}.py").write_text(model)
    expect = tmp_path / "earlier.json"  # each took 200 s: with 60 s, only the one a run must start fits
    expect.write_text(json.dumps({"rows": [{"problem": f"level1/{s}.py", "wall_s": 200.0}
                                           for s in ("01_first", "02_second")]}))
    env = dict(os.environ, OUT=str(tmp_path / "out"), KERNELOPT_BENCH_PROBLEMS=str(problems.parent))
    env.pop("TRITON_INTERPRET", None)
    try:
        proc = subprocess.run(["benchmarks/device_bench.sh", name, "60", "--expect", str(expect)], cwd=REPO,
                              env=env, capture_output=True, text=True, timeout=240)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        with tarfile.open(tmp_path / "out" / f"{name}.tgz") as tar:
            summary = json.load(tar.extractfile(f"{name}/bench.json"))
        assert [r["problem"] for r in summary["rows"]] == ["level1/01_first.py"]
        assert summary["not_started"] == ["level1/02_second.py"]
        # the next call resumes it: nothing fits 60 s either, and a run that has started nothing starts one
        proc = subprocess.run(["benchmarks/device_bench.sh", name, "60", "--resume", "--expect", str(expect)],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        with tarfile.open(tmp_path / "out" / f"{name}.tgz") as tar:
            summary = json.load(tar.extractfile(f"{name}/bench.json"))
        assert [r["problem"] for r in summary["rows"]] == ["level1/01_first.py", "level1/02_second.py"]
        assert not summary.get("not_started")
    finally:
        _remove_run(name)


def test_resuming_a_run_that_is_not_there_runs_nothing_and_says_why(tmp_path):
    # a device call whose carry missed runs/NAME would otherwise measure the finished rows again
    name = f"devbench-{uuid.uuid4().hex[:8]}"
    out = tmp_path / "out"
    env = dict(os.environ, OUT=str(out))
    proc = subprocess.run(["benchmarks/device_bench.sh", name, "60", "--resume", "--only", "level1/01"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"runs/{name}/bench.json is not here" in proc.stderr
    assert f"runs/{name}/bench.json is not here" in (out / f"{name}.log").read_text()  # what the call returns
    assert not (REPO / "runs" / name).exists() and not (out / f"{name}.tgz").exists()
