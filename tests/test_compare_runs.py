"""benchmarks/compare_runs.py: two bench results side by side (fp32 strict vs tf32, fp32 vs bf16).

Run A is the committed level-2 strict result (a bench.json written before runs stated their dtype);
run B is built from its rows the way `kernelopt bench` writes a summary (pipeline.bench.summarize),
as a bf16 run: one problem faster, one not measured, one not run.
"""
import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.compare_runs import compare, deployed_ms, load_run, render
from kernelopt.pipeline.bench import RunSettings, _geomean, deployed_speedup, summarize
from kernelopt.pipeline.device import DeviceInfo
from kernelopt.pipeline.options import NO_GPU_TIMING, not_measured

REPO = Path(__file__).resolve().parent.parent
STRICT = REPO / "benchmarks" / "results" / "2026-12-01-h200-level2-strict"
H200 = DeviceInfo(cuda=True, name="NVIDIA H200", count=1, torch_version="2.11.0+cu130", triton_version="3.6.0",
                  ncu=False)


@pytest.fixture
def runs(tmp_path):
    a = json.loads((STRICT / "bench.json").read_text())
    rows = copy.deepcopy(a["rows"])
    first, second = rows[0], rows[1]
    # first: bf16 halves the baseline and the deployed kernel
    for key in ("baseline_ms", "optimized_ms"):
        first["result"][key] /= 2
    first["result"]["dtype"] = "bf16"
    second["result"] = not_measured(second["result"], NO_GPU_TIMING)
    dropped = rows.pop(2)["problem"]
    b = summarize(rows, 600.0, 1, H200, RunSettings("bf16", "strict"))
    path = tmp_path / "bf16" / "bench.json"
    path.parent.mkdir()
    path.write_text(json.dumps(b))
    return a, b, path, first, second, dropped


def test_runs_side_by_side_with_their_settings_and_measured_geomeans(runs):
    a, b, b_path, first, second, dropped = runs
    run_a, run_b = load_run(STRICT), load_run(b_path)
    # the older bench.json states no dtype (bench had no --dtype: fp32) and its policy is its jobs'
    assert (run_a.label(), run_a.device) == ("fp32 strict", "NVIDIA H200")
    assert (b["dtype"], b["precision"], run_b.label()) == ("bf16", "strict", "bf16 strict")
    cmp = compare(run_a, run_b)
    by = {r["problem"]: r for r in cmp["rows"]}
    assert len(by) == len(a["rows"])  # every problem of either run

    # geomeans over measured speedups only: A's is the bench's own figure; B leaves out the unmeasured one
    g = cmp["geomean"]["level2"]
    assert g["a"][0] == pytest.approx(a["geomean"]["level2"]) and g["a"][1] == 12
    measured_b = [deployed_speedup(r) for r in b["rows"] if deployed_speedup(r) is not None]
    assert g["b"][1] == len(measured_b) == 10 and g["b"][0] == pytest.approx(_geomean(measured_b))
    assert g["b"][0] == pytest.approx(b["geomean"]["level2"])
    both = [p for p, r in by.items() if r["a"]["speedup"] is not None and r["b"]["speedup"] is not None]
    assert g["both_b"][1] == len(both) == 10
    assert g["both_a"][0] == pytest.approx(_geomean([by[p]["a"]["speedup"] for p in both]))

    # per problem: B's deployed time against A's, only where both were measured
    r1 = by[first["problem"]]
    assert r1["b_vs_a_time"] == pytest.approx(2.0) and r1["a_ms"] == pytest.approx(2 * r1["b_ms"])
    assert r1["b_ms"] == pytest.approx(deployed_ms(first))
    r2 = by[second["problem"]]
    assert r2["b"]["speedup"] is None and r2["b_ms"] is None and r2["b_vs_a_time"] is None
    assert by[dropped]["b"]["outcome"] is None and by[dropped]["b_vs_a_time"] is None

    md = render(cmp)
    assert "- A: fp32 strict on NVIDIA H200" in md and "- B: bf16 strict on NVIDIA H200" in md
    assert f"| {second['problem']} | optimized | " in md
    line = next(x for x in md.splitlines() if x.startswith(f"| {second['problem']} |"))
    assert "| not measured |" in line and line.endswith("|  |")  # no speed, no time ratio
    assert next(x for x in md.splitlines() if x.startswith(f"| {dropped} |")).count("not run") == 1
    assert "None" not in md and "nan" not in md
    assert f"| level2 | {g['a'][0]:.3f}x (12/12 measured) | {g['b'][0]:.3f}x (10/11 measured) |" in md


def test_compare_runs_command_writes_the_table(runs, tmp_path):
    _, _, b_path, *_ = runs
    out = tmp_path / "compare.md"
    proc = subprocess.run([sys.executable, "benchmarks/compare_runs.py", str(STRICT), str(b_path.parent),
                           "--out", str(out)], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == proc.stdout and proc.stdout.startswith("# Two bench runs side by side")
    bad = subprocess.run([sys.executable, "benchmarks/compare_runs.py", str(STRICT), str(tmp_path / "nothing")],
                         cwd=REPO, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert bad.returncode == 1 and "not a readable bench.json" in bad.stderr and "Traceback" not in bad.stderr


def test_the_summary_states_the_largest_noise_of_the_measured_results_and_where():
    rows = copy.deepcopy(json.loads((STRICT / "bench.json").read_text())["rows"])
    rows[3]["result"]["noise_pct"] = 5.17  # say one result stated a 5.17% spread
    rows[4]["result"] = not_measured(rows[4]["result"], NO_GPU_TIMING)
    rows[4]["result"]["noise_pct"] = 75.0  # a noise that was never measured on a GPU is no figure at all
    s = summarize(rows, 600.0, 1, H200, RunSettings("fp32", "strict"))
    assert s["max_noise_pct"] == 5.17
    assert f"Largest noise (the spread each result states with its speed): 5.17% ({rows[3]['problem']})" in s["text"]
