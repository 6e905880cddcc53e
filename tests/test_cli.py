"""The `kernelopt` command as a user runs it, in real processes, without a GPU."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import HAS_CUDA

REPO = Path(__file__).resolve().parent.parent
KERNEL = REPO / "benchmarks" / "kernels" / "add_relu_kernel.py"
SOFTMAX = REPO / "kernelopt" / "examples" / "row_softmax_kernel.py"
NO_GPU_NOTE = "no GPU: the Triton interpreter checks correctness only"

pytestmark = pytest.mark.skipif(HAS_CUDA, reason="checks the behaviour on a machine without a GPU")


def kernelopt(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("TRITON_INTERPRET", None)  # the command decides that for its children
    return subprocess.run([sys.executable, "-m", "kernelopt.cli.main", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_optimize_without_a_problem_says_what_it_needs_and_runs_the_kernel_default(tmp_path):
    proc = kernelopt("optimize", "--workdir", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "needs a CUDA GPU" in proc.stdout
    assert "Triton interpreter" in proc.stdout
    assert "outcome: fallback — no-gpu" in proc.stdout
    assert f"speed: not measured ({NO_GPU_NOTE})" in proc.stdout and "speedup vs compiler baseline" not in proc.stdout
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["load"]["kind"] == "kernel"
    result = report["result"]
    assert result["outcome"] == "fallback"
    # Nothing timed on the interpreter is reported as a speed or a time.
    assert result["timing"] == "not-measured" and result["timing_note"] == NO_GPU_NOTE
    assert [result[k] for k in ("speedup", "baseline_ms", "optimized_ms", "noise_pct")] == [None] * 4
    md = (tmp_path / "run" / "report.md").read_text()
    assert f"- Speed: not measured ({NO_GPU_NOTE})" in md
    assert "Speedup vs compiler baseline" not in md and "1.000x" not in md and "None" not in md, md
    assert "no kernel speedup measured" in md
    assert (tmp_path / "run" / "optimized_module.py").read_text() == \
        (REPO / "kernelopt" / "examples" / "row_softmax_kernel.py").read_text()
    # Each candidate's verdict on the console: its gate's feedback whole, or cut at a word and marked (issue 37)
    from kernelopt.core.text import clip, one_line
    from kernelopt.pipeline.context import FEEDBACK_CHARS

    trajectory = [json.loads(line) for line in (tmp_path / "run" / "trajectory.jsonl").read_text().splitlines()]
    feedback = [one_line(t["feedback"]) for t in trajectory if t.get("feedback") and not t.get("passed")]
    assert feedback and any(len(f) > 160 for f in feedback), feedback  # longer than the old cut
    for f in feedback:
        assert f" {clip(f, FEEDBACK_CHARS)}\n" in proc.stdout, f


def test_optimize_model_file_without_gpu_falls_back_before_loading_it(tmp_path):
    # A model that would take long to build (and leaves a mark if it is built).
    marker = tmp_path / "built"
    problem = tmp_path / "huge_model.py"
    problem.write_text(
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        f"        open({str(marker)!r}, 'w').close()\n"
        "        self.w = torch.nn.Parameter(torch.randn(8192, 8192))\n"
        "    def forward(self, x):\n"
        "        return x @ self.w\n"
        "def get_inputs():\n"
        "    return [torch.randn(8192, 8192)]\n"
        "def get_init_inputs():\n"
        "    return []\n")
    proc = kernelopt("optimize", str(problem), "--workdir", str(tmp_path / "run"), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["outcome"] == "fallback" and result["cause"].startswith("no-gpu: model mode needs a CUDA GPU")
    assert result["timing"] == "not-measured" and result["speedup"] is None and result["baseline_ms"] is None
    assert not marker.exists(), "the model was built"
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert "load" not in report
    md = (tmp_path / "run" / "report.md").read_text()
    assert f"Speed: not measured ({NO_GPU_NOTE})" in md and "None" not in md


def test_optimize_bad_file_fails_with_its_message(tmp_path):
    proc = kernelopt("optimize", "tests/testdata/bad/import_error.py", "--workdir", str(tmp_path), "--json")
    assert proc.returncode == 1
    result = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert "failed to import: ModuleNotFoundError" in result["cause"]
    assert (tmp_path / "report.json").exists()


def test_check_passes_a_correct_kernel_file_and_fails_a_wrong_one():
    ok = kernelopt("check", str(KERNEL), str(KERNEL))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "PASS: 5/5 fresh seeds" in ok.stdout
    bad = kernelopt("check", "tests/testdata/bad/add_relu_wrong.py", str(KERNEL))
    assert bad.returncode == 1
    assert "FAIL: 0/5" in bad.stdout


def test_bench_reports_outcomes_and_causes(tmp_path):
    proc = kernelopt("bench", "benchmarks/kernels", "--only", "add_relu", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "bench.json").read_text())
    assert summary["outcomes"] == {"fallback": 1}
    assert summary["causes"] == {"no-gpu": 1}
    assert summary["regressions"] == 0 and summary["wrong_answers"] == 0
    # No GPU: no speed was measured, so there is no geomean to report.
    assert summary["geomean"]["all"] is None and summary["not_measured"] == 1
    bench_md = (tmp_path / "bench.md").read_text()
    assert f"Geomean speedup vs compiler baseline: not measured ({NO_GPU_NOTE})" in bench_md
    assert "| add_relu_kernel.py | fallback | not measured |" in bench_md and "None" not in bench_md
    assert "Outcomes: {'fallback': 1}" in bench_md and "<Outcome" not in bench_md  # values, not enum reprs
    # No GPU here: the bench says it ran on the CPU, and no GPU count, "[gpu 0]" or GPU-minutes (issue 37)
    assert "on the CPU: no GPU" in bench_md.splitlines()[0] and summary["gpus"] == 0, bench_md
    assert "GPU(s)" not in bench_md + proc.stdout and "GPU-minutes" not in bench_md + proc.stdout, bench_md
    assert "[cpu] add_relu_kernel.py: fallback — " in proc.stdout and "[gpu" not in proc.stdout, proc.stdout
    # ...and the cause whole, on the console and in bench.md (they were cut at 120 and 90 characters)
    cause = summary["rows"][0]["result"]["cause"]
    assert len(cause) > 120 and f" — {cause} (" in proc.stdout and f" | {cause} |" in bench_md, (cause, bench_md)
    assert "stage s (L/C/R/Va/P/S/V)" in (tmp_path / "bench.md").read_text()
    # no --time-limit: a kernel folder's default, stated (issue 37: the bench's default limit says what it is)
    assert summary["rows"][0]["time_limit_s"] == 300 and "Time limit per problem: all 300 s." in bench_md
    # each row says which engine source ran it (a resumed run may mix engines: pipeline.provenance)
    from kernelopt.pipeline.provenance import engine_fingerprint

    assert [r["engine"] for r in summary["rows"]] == [engine_fingerprint()]
    assert f"Engine source: {engine_fingerprint()} " in bench_md and summary["engines"] == {engine_fingerprint(): 1}

    # A resumed bench keeps the finished rows and runs nothing twice.
    events = tmp_path / "all" / "add_relu_kernel" / "events.jsonl"
    before = events.read_text()
    again = kernelopt("bench", "benchmarks/kernels", "--only", "add_relu", "--out", str(tmp_path), "--resume")
    assert again.returncode == 0, again.stdout + again.stderr
    resumed = json.loads((tmp_path / "bench.json").read_text())
    assert [r["problem"] for r in resumed["rows"]] == [r["problem"] for r in summary["rows"]]
    assert events.read_text() == before


def _model_problems(tmp_path: Path, *stems: str) -> Path:
    """tmp_path/problems/level1/<stem>.py for each stem, each a model file (without a GPU: `no-gpu` in seconds)."""
    problems = tmp_path / "problems" / "level1"
    problems.mkdir(parents=True)
    model = (REPO / "benchmarks" / "problems" / "level1" / "01_gelu_tanh.py").read_text()
    for stem in stems:
        (problems / f"{stem}.py").write_text(model)
    return problems


def test_a_bench_with_a_deadline_starts_only_what_it_expects_to_finish(tmp_path):
    # On a lent GPU a problem killed half-way is device time spent on nothing: --stop-after starts a problem
    # only if its expected time (an earlier run's, --expect; else the time limit) fits what is left.
    problems = _model_problems(tmp_path, "01_quick", "02_slow")
    expect = tmp_path / "earlier.json"
    expect.write_text(json.dumps({"rows": [{"problem": "level1/01_quick.py", "wall_s": 5.0},
                                           {"problem": "level1/02_slow.py", "wall_s": 900.0,
                                            "check": {"passed": True}}]}))
    out = tmp_path / "out"
    proc = kernelopt("bench", str(problems.parent), "--out", str(out), "--time-limit", "200",
                     "--stop-after", "100", "--expect", str(expect))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((out / "bench.json").read_text())
    assert [r["problem"] for r in summary["rows"]] == ["level1/01_quick.py"]
    assert summary["not_started"] == ["level1/02_slow.py"]
    assert ("Not started (1; the --stop-after deadline left too little time for them, --resume runs them): "
            "level1/02_slow.py") in (out / "bench.md").read_text()
    # resumed with a deadline nothing fits: the shortest pending problem starts rather than none
    again = kernelopt("bench", str(problems.parent), "--out", str(out), "--time-limit", "200", "--resume",
                      "--stop-after", "1", "--expect", str(expect))
    assert again.returncode == 0, again.stdout + again.stderr
    resumed = json.loads((out / "bench.json").read_text())
    assert [r["problem"] for r in resumed["rows"]] == ["level1/01_quick.py", "level1/02_slow.py"]
    assert resumed["not_started"] == [] and "Not started" not in (out / "bench.md").read_text()


def test_each_level_has_its_default_time_limit_and_the_option_sets_one_for_all():
    from kernelopt.pipeline.bench import limits_text, time_limit_s

    assert [time_limit_s(lv, None) for lv in ("level1", "level2", "level3", "all")] == [300, 300, 900, 300]
    assert time_limit_s("level3", 150.0) == 150.0
    rows = [{"level": "level3", "time_limit_s": 900.0}, {"level": "level1", "time_limit_s": 300.0},
            {"level": "level1", "time_limit_s": 300.0}, {"level": "level2"}]  # an earlier run's row: no limit
    assert limits_text(rows) == "level1 300 s, level3 900 s" and limits_text([{"level": "x"}]) == "not recorded"


def test_expected_seconds_uses_an_earlier_run_within_the_time_limit():
    from kernelopt.pipeline.bench import CHECK_EXPECTED_S, EXPECT_MARGIN, expected_seconds

    earlier = {"a.py": {"wall_s": 100.0}, "b.py": {"wall_s": 100.0, "check": {"passed": True}, "check_s": 30.0},
               "c.py": {"wall_s": 100.0, "check": {"passed": True}}, "d.py": {"wall_s": 1000.0}}
    assert expected_seconds("a.py", earlier, 240) == pytest.approx(100 * EXPECT_MARGIN)
    assert expected_seconds("b.py", earlier, 240) == pytest.approx(100 * EXPECT_MARGIN + 30)
    assert expected_seconds("c.py", earlier, 240) == pytest.approx(100 * EXPECT_MARGIN + CHECK_EXPECTED_S)
    assert expected_seconds("d.py", earlier, 240) == 240 + CHECK_EXPECTED_S  # a job is killed at its limit
    assert expected_seconds("new.py", earlier, 240) == 240 + CHECK_EXPECTED_S


def test_an_earlier_run_of_other_settings_gives_its_times_plus_a_search(tmp_path):
    # a strict run's times for a bf16 run: bf16 searches kernels strict skipped at the memory roofline
    from kernelopt.pipeline.bench import OTHER_SETTINGS_EXTRA_S, RunSettings, expected_times

    rows = [{"problem": "a.py", "wall_s": 100.0}]
    strict = tmp_path / "strict.json"
    strict.write_text(json.dumps({"dtype": "fp32", "precision": "strict", "rows": rows}))
    old = tmp_path / "old.json"  # written before bench.json stated its settings: fp32, its jobs' policy
    old.write_text(json.dumps({"rows": [{**rows[0], "result": {"precision": "strict"}}]}))
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps({"rows": [{**rows[0], "result": {"precision": "strict"}},
                                          {"problem": "b.py", "wall_s": 1.0, "result": {"precision": "tf32"}}]}))
    same = expected_times(str(strict), RunSettings("fp32", "strict"))
    assert same.extra_s == 0 and same.note is None
    assert expected_times(str(old), RunSettings("fp32", "strict")).extra_s == 0
    assert same.seconds("a.py", 240) == pytest.approx(100 * 1.15)
    for path, run in ((strict, RunSettings("bf16", "strict")), (strict, RunSettings("fp32", "tf32")),
                      (mixed, RunSettings("fp32", "strict"))):
        other = expected_times(str(path), run)
        assert other.extra_s == OTHER_SETTINGS_EXTRA_S > 0, (path, run)
        assert other.seconds("a.py", 240) == pytest.approx(100 * 1.15 + OTHER_SETTINGS_EXTRA_S)
        assert other.seconds("new.py", 240) == 240 + 45  # no earlier time: the time limit, as before
        assert f"this run {run.label()}" in (other.note or "")
    assert expected_times(str(strict), RunSettings("bf16", "strict")).seconds("a.py", 100) == 100 + 45  # capped


def test_a_deadline_estimated_from_a_run_of_another_dtype_leaves_room_for_its_searches(tmp_path):
    problems = _model_problems(tmp_path, "01_quick", "02_short")
    rows = [{"problem": "level1/01_quick.py", "wall_s": 1.0}, {"problem": "level1/02_short.py", "wall_s": 10.0}]
    for dtype, started in (("bf16", ["level1/01_quick.py", "level1/02_short.py"]), ("fp32", ["level1/01_quick.py"])):
        expect = tmp_path / f"earlier-{dtype}.json"
        expect.write_text(json.dumps({"dtype": dtype, "precision": "strict", "rows": rows}))
        out = tmp_path / f"out-{dtype}"
        # a bf16 run: 02 is expected to take 11.5 s after a bf16 run, 71.5 s after an fp32 one; 70 s left
        proc = kernelopt("bench", str(problems.parent), "--out", str(out), "--dtype", "bf16", "--time-limit", "200",
                         "--stop-after", "70", "--expect", str(expect))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        summary = json.loads((out / "bench.json").read_text())
        assert [r["problem"] for r in summary["rows"]] == started, dtype
        assert ("is dtype fp32, precision strict, this run dtype bf16, precision strict" in proc.stdout) == \
            (dtype == "fp32"), proc.stdout


# ---------------------------------------------------------------- user errors: one line, no traceback

def kernelopt_in(cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """The command run from another directory (what it creates there can be seen)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=str(REPO))
    env.pop("TRITON_INTERPRET", None)
    return subprocess.run([sys.executable, "-m", "kernelopt.cli.main", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def assert_one_line_error(proc: subprocess.CompletedProcess, line: str, code: int) -> None:
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out and 'File "' not in out, out
    assert proc.stderr == line + "\n", out
    assert proc.stdout == "", out
    assert proc.returncode == code, out


@pytest.mark.parametrize("args, line", [
    (["optimize", "missing.py"], "kernelopt optimize: problem file missing.py does not exist"),
    (["optimize", "problems"], "kernelopt optimize: problem file problems is a directory, not a file"),
    (["optimize", "missing.py", "--workdir", "out"], "kernelopt optimize: problem file missing.py does not exist"),
    (["optimize", "problems/empty.py", "--weights", "w.safetensors"],
     "kernelopt optimize: weights file w.safetensors does not exist"),
    (["optimize", "problems/empty.py", "--budget", "0"], "kernelopt optimize: --budget must be > 0, got 0.0"),
    (["optimize", "problems/empty.py", "--workdir", "notes.txt"], "kernelopt optimize: work directory notes.txt is a "
     "file"),
    (["bench", "problems", "--out", "notes.txt"], "kernelopt bench: --out notes.txt is a file, not a directory"),
    (["bench", "missing"], "kernelopt bench: problem directory missing does not exist"),
    (["bench", "empty"], "kernelopt bench: no problem files (*.py) under empty"),
    (["bench", "problems/empty.py"],
     "kernelopt bench: problems/empty.py is a file; bench takes a directory of problems (optimize takes one "
     "problem file)"),
    (["bench", "problems", "--stop-after", "0"], "kernelopt bench: --stop-after must be positive"),
    (["bench", "problems", "--expect", "notes.txt"],
     "kernelopt bench: --expect notes.txt: not a bench.json this bench can read (Expecting value: line 1 column 1 "
     "(char 0))"),
    (["bench", "problems", "--only", "level9"], "kernelopt bench: --only 'level9' matches none of the 1 problems "
     "under problems"),
    (["check", "missing.py", "problems/empty.py"], "kernelopt check: optimized module missing.py does not exist"),
    (["check", "problems/empty.py", "missing.py"], "kernelopt check: problem file missing.py does not exist"),
    (["check", "problems/empty.py", "problems"], "kernelopt check: problem file problems is a directory, not a file"),
    (["check", "problems/empty.py", "notes.txt"],
     "kernelopt check: notes.txt does not parse as Python: invalid syntax (line 1)"),
    (["check", "problems/empty.py", "blob.bin"], "kernelopt check: blob.bin is not a Python file (not UTF-8 text)"),
    (["check", "notes.txt", str(KERNEL)],
     "kernelopt check: notes.txt does not parse as Python: invalid syntax (line 1)"),
])
def test_unusable_input_is_one_line_and_creates_nothing(tmp_path, args, line):
    (tmp_path / "problems").mkdir()
    (tmp_path / "problems" / "empty.py").write_text("x = 1\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("these are notes, not a problem\n")
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)))
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    proc = kernelopt_in(tmp_path, *args)
    assert_one_line_error(proc, line, 2)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # no runs/<name>/, no out dir


def test_check_of_the_wrong_problem_is_one_line(tmp_path):
    # A kernel file's optimized module checked against another kernel problem.
    proc = kernelopt_in(tmp_path, "check", str(KERNEL), str(SOFTMAX))
    assert_one_line_error(proc, "kernelopt check: add_relu_kernel.py does not run on row_softmax_kernel.py's "
                          "inputs (seed 7001): TypeError: launch() missing 1 required positional argument: 'y'", 1)
    # A kernel file given where a model's optimized module belongs.
    model = REPO / "tests" / "testdata" / "problems" / "linear_gelu.py"
    proc = kernelopt_in(tmp_path, "check", str(KERNEL), str(model))
    assert_one_line_error(proc, "kernelopt check: add_relu_kernel.py has no class ModelNew: it is not the optimized "
                          "module of a model (and linear_gelu.py is a model file)", 1)
    # The optimized module of another model: its parameters do not fit.
    other = tmp_path / "optimized_module.py"
    other.write_text("import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def __init__(self):\n"
                     "        super().__init__()\n        self.w = torch.nn.Linear(3, 3)\n\n"
                     "    def forward(self, x):\n        return self.w(x)\n")
    proc = kernelopt_in(tmp_path, "check", str(other), str(model))
    assert_one_line_error(proc, "kernelopt check: optimized_module.py does not belong to linear_gelu.py: its ModelNew "
                          "cannot take the problem's Model parameters (TypeError: ModelNew.__init__() takes 1 "
                          "positional argument but 3 were given)", 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["optimized_module.py"]
