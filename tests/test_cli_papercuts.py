"""A newcomer's papercuts with the command line (issue 37, item 6), each reproduced here: unwritable or
foreign output directories, option values the API refuses, a missing triton, messages cut mid-word, and a
bench on a machine without a GPU that spoke of GPUs. Real processes where the user would see the output."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelopt.core.text import clip, one_line
from kernelopt.pipeline.device import DeviceInfo
from kernelopt.pipeline.errors import InputError, require_output_dir

REPO = Path(__file__).resolve().parent.parent
KERNEL = REPO / "benchmarks" / "kernels" / "add_relu_kernel.py"
# An import hook that hides triton, as on a machine with the CPU build of torch and no triton: the
# interpreter's own import machinery refuses it, as it refuses a package that is not installed.
HIDE_TRITON = '''import sys


class _NoTriton:
    def find_spec(self, name, path=None, target=None):
        if name == "triton" or name.startswith("triton."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoTriton())
'''


def kernelopt_in(cwd: Path, *args: str, pythonpath: tuple[Path, ...] = (), timeout: float = 120):
    env = dict(os.environ, PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join(str(p) for p in (*pythonpath, REPO)))
    env.pop("TRITON_INTERPRET", None)
    return subprocess.run([sys.executable, "-m", "kernelopt.cli.main", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def assert_one_line_error(proc: subprocess.CompletedProcess, line: str) -> None:
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out and 'File "' not in out, out
    assert proc.stderr == line + "\n", out
    assert proc.stdout == "" and proc.returncode == 2, out


def _tree(root: Path) -> list[Path]:
    return sorted(p.relative_to(root) for p in root.rglob("*"))


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    (tmp_path / "problems").mkdir()
    (tmp_path / "problems" / "empty.py").write_text("x = 1\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "model.py").write_text("import torch\n")
    (tmp_path / "notes.txt").write_text("these are notes\n")
    return tmp_path


# ---------------------------------------------------------------- b. --workdir / --out

@pytest.mark.parametrize("args, line", [
    (["optimize", str(KERNEL), "--workdir", "notes.txt/run"],
     "kernelopt optimize: work directory notes.txt/run cannot be created: {cwd}/notes.txt is a file, not a "
     "directory"),
    (["optimize", str(KERNEL), "--workdir", "/proc/kernelopt-test/run"],
     "kernelopt optimize: work directory /proc/kernelopt-test/run cannot be created: No such file or directory"),
    (["optimize", str(KERNEL), "--workdir", "src"],
     "kernelopt optimize: work directory src already holds files no kernelopt run wrote (model.py); give a new or "
     "empty directory, or one of an earlier run (it holds events.jsonl or report.json)"),
    (["bench", "problems", "--out", "notes.txt/bench"],
     "kernelopt bench: --out notes.txt/bench cannot be created: {cwd}/notes.txt is a file, not a directory"),
    (["bench", "problems", "--out", "/proc/kernelopt-test"],
     "kernelopt bench: --out /proc/kernelopt-test cannot be created: No such file or directory"),
    (["bench", "problems", "--out", "src"],
     "kernelopt bench: --out src already holds files no kernelopt run wrote (model.py); give a new or empty "
     "directory, or one of an earlier run (it holds .kernelopt-bench or bench.json)"),
])
def test_an_unusable_output_directory_is_one_line_and_nothing_is_written(cwd, args, line):
    before = _tree(cwd)
    proc = kernelopt_in(cwd, *args)
    assert_one_line_error(proc, line.format(cwd=cwd))
    assert _tree(cwd) == before  # nothing written into src/, no runs/ or partial directories


def test_the_output_directory_rule(tmp_path):
    markers = ("events.jsonl", "report.json")
    new = tmp_path / "a" / "b" / "run"
    assert require_output_dir(new, "work directory", markers) == new and new.is_dir()  # created
    assert require_output_dir(new, "work directory", markers) == new  # empty: fine
    (new / "events.jsonl").write_text("")
    (new / "optimized_module.py").write_text("")
    assert require_output_dir(new, "work directory", markers) == new  # an earlier run's: written again
    mine = tmp_path / "mine"
    mine.mkdir()
    for i in range(5):
        (mine / f"f{i}.py").write_text("")
    with pytest.raises(InputError, match=r"^work directory .*mine already holds files no kernelopt run wrote "
                       r"\(f0.py, f1.py, f2.py and 2 more\)"):
        require_output_dir(mine, "work directory", markers)
    if os.geteuid() != 0:  # root writes anywhere: the read-only and file cases above stand in for it there
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(InputError, match="cannot be created: Permission denied"):
            require_output_dir(locked / "run", "--out", markers)
        assert not (locked / "run").exists()


# ---------------------------------------------------------------- e. option values: as the API checks them

@pytest.mark.parametrize("args, line", [
    (["--budget", "NaN"], "kernelopt optimize: --budget must be a finite number (not NaN or Infinity), got NaN"),
    (["--budget", "inf"], "kernelopt optimize: --budget must be a finite number (not NaN or Infinity), got Infinity"),
    (["--budget", "0"], "kernelopt optimize: --budget must be > 0, got 0.0"),
    (["--search", "T=-1"], "kernelopt optimize: --search T (iterations) must be >= 1, got -1"),
    (["--search", "T=3,B=0,s+=nan"], "kernelopt optimize: --search B (beam_width) must be >= 1, got 0; --search s+ "
     "(memory_success) must be a finite number (not NaN or Infinity), got NaN"),
    (["--search", "chains=100"], "kernelopt optimize: --search chains must be <= 16, got 100"),
    (["--generators", "nope"], "kernelopt optimize: --generators: unknown generator(s) 'nope'; available: "
     "{generators}"),
])
def test_optimize_refuses_the_option_values_the_api_refuses(cwd, args, line):
    from kernelopt.api.options import InvalidOptions, validate_options
    from kernelopt.cli.main import search_options
    from kernelopt.search.registry import available

    proc = kernelopt_in(cwd, "optimize", "problems/empty.py", *args)
    assert_one_line_error(proc, line.format(generators=", ".join(available())))
    assert _tree(cwd) == sorted(Path(p) for p in ("notes.txt", "problems", "problems/empty.py", "src",
                                                   "src/model.py"))
    # the API refuses the same values (one model checks both)
    raw: dict = {"time_budget_s": float(args[1])} if args[0] == "--budget" else \
        {"generators": [args[1]]} if args[0] == "--generators" else search_options(args[1])
    with pytest.raises(InvalidOptions):
        validate_options(raw)


def test_the_engine_refuses_nan_without_the_api_model_too():
    from kernelopt.pipeline.options import JobOptions

    for bad in ({"time_budget_s": float("nan")}, {"gamma": float("inf")}, {"iterations": 0}):
        with pytest.raises(ValueError):
            JobOptions(**bad)


def test_bench_refuses_a_time_limit_or_deadline_that_is_not_a_number_of_seconds(cwd):
    proc = kernelopt_in(cwd, "bench", "problems", "--time-limit", "nan")
    assert_one_line_error(proc, "kernelopt bench: --time-limit must be a finite number of seconds above 30 (each job "
                          "gets 30 s less, for its start and its report), got nan")
    proc = kernelopt_in(cwd, "bench", "problems", "--stop-after", "nan")
    assert_one_line_error(proc, "kernelopt bench: --stop-after must be positive")
    assert not (cwd / "runs").exists()


# ---------------------------------------------------------------- g. torch without triton

@pytest.mark.parametrize("args", [["optimize"], ["optimize", str(KERNEL)], ["bench", "problems"],
                                  ["check", str(KERNEL), str(KERNEL)]])
def test_a_missing_triton_is_one_line_saying_what_to_install(cwd, tmp_path_factory, args):
    hook = tmp_path_factory.mktemp("no_triton")
    (hook / "sitecustomize.py").write_text(HIDE_TRITON)
    probe = subprocess.run([sys.executable, "-c", "import triton"], env=dict(os.environ, PYTHONPATH=str(hook)),
                           capture_output=True, text=True)
    assert "No module named 'triton'" in probe.stderr  # the hook hides it as a missing package would be
    before = _tree(cwd)
    proc = kernelopt_in(cwd, *args, pythonpath=(hook,))
    assert_one_line_error(proc, f"kernelopt {args[0]}: triton is not installed (CPU builds of torch do not bring it; "
                          "the engine needs it beside torch, the Triton interpreter included): install it with "
                          f"`{sys.executable} -m pip install triton`")
    assert _tree(cwd) == before


# ---------------------------------------------------------------- f. messages whole (or cut at a word, marked)

def test_clip_keeps_a_message_whole_or_cuts_it_at_a_word_with_an_ellipsis():
    assert clip("a cause that fits", 40) == "a cause that fits"
    text = "fallback: the best candidate passed Gates 1-3 on the Triton interpreter"
    for limit in range(10, len(text)):
        cut = clip(text, limit)
        assert len(cut) <= limit and cut.endswith("…"), (limit, cut)
        assert text.startswith(cut[:-1]) and text[len(cut) - 1] == " ", (limit, cut)  # ends with a whole word
    assert clip("x" * 50, 10) == "x" * 9 + "…"  # one word longer than the cap: nothing else to cut at
    noted = clip("word " * 100, 60, note=" (500 characters in all; cut)")
    assert noted.endswith("word… (500 characters in all; cut)") and len(noted) <= 60
    accents = clip("é" * 5 + " " + "ü" * 20, 16, encoding="utf-8")  # a cap in bytes: never half a character
    assert accents == "é" * 5 + "…" and len(accents.encode()) <= 16
    assert one_line("a\n  b\tc ") == "a b c"


CPU = DeviceInfo(cuda=False, name="cpu", count=0, torch_version="2.13.0+cpu", triton_version="3.9.0", ncu=False)
H200 = DeviceInfo(cuda=True, name="NVIDIA H200", count=1, torch_version="2.11.0+cu130", triton_version="3.6.0",
                  ncu=False)
LONG_CAUSE = ("no-gpu: the best candidate passed Gates 1-3 on the Triton interpreter; speed cannot be measured "
              "without a GPU, so the original kernel is kept | and a pipe")


def _row(problem: str, cause: str) -> dict:
    return {"problem": problem, "level": "all", "name": problem, "wall_s": 144.0, "gpu": None,
            "result": {"outcome": "fallback", "cause": cause, "speedup": None, "timing": "not-measured",
                       "timing_note": "no GPU: the Triton interpreter checks correctness only"}}


def test_bench_md_on_a_cpu_says_cpu_and_keeps_causes_whole():
    from kernelopt.pipeline.bench import summarize

    text = summarize([_row("add_relu_kernel.py", LONG_CAUSE)], 150.0, 0, CPU)["text"]
    assert "on the CPU: no GPU" in text.splitlines()[0], text
    assert "GPU(s)" not in text and "GPU-minutes" not in text, text
    assert f"| {LONG_CAUSE.replace('|', chr(92) + '|')} |" in text, text  # whole, its pipe escaped
    gpu = summarize([_row("add_relu_kernel.py", "near-optimal: x")], 150.0, 1, H200)
    assert "1 GPU(s), NVIDIA H200" in gpu["text"] and "GPU-minutes 2.4" in gpu["text"] and gpu["gpus"] == 1
    assert summarize([_row("a.py", "near-optimal: x")], 150.0, 1, CPU)["gpus"] == 0


def test_a_check_that_could_not_run_is_not_counted_a_wrong_answer():
    """On an H100 the check of a correct minGPT result raised in its own float64 copy, and bench.md said
    "Wrong answers (kernelopt check): 1": a result the check could not run on is listed as not re-checked."""
    from kernelopt.pipeline.bench import summarize

    optimized = {"outcome": "optimized", "cause": "speedup 1.1x", "speedup": 1.1, "timing": "measured",
                 "noise_pct": 0.5}
    rows = [{**_row("a.py", "x"), "result": optimized, "check": {"passed": True, "summary": "PASS"}},
            {**_row("b.py", "x"), "result": optimized, "check": {"passed": False, "summary": "FAIL: 0/5"}},
            {**_row("c.py", "x"), "result": optimized,
             "check": {"passed": False, "ran": False, "summary": "FAIL: the check could not run: exception"}}]
    summary = summarize(rows, 150.0, 1, H200)
    assert summary["wrong_answers"] == 1 and summary["not_rechecked"] == ["c.py"]
    text = summary["text"]
    assert "Wrong answers (kernelopt check): 1 ['b.py']" in text
    assert "Not re-checked (kernelopt check could not run): 1 ['c.py']" in text
    assert "| could not run |" in text and text.count("| FAIL |") == 1
