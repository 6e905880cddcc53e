"""Helion kernel files (issue 38): recognized, their configs pinned as plain data, Helion's configuration space
read in a sandboxed child and searched by `helion_config`, whole jobs on the Triton interpreter.

Without a GPU the candidates' Triton code (Helion's, under each pinned config) runs on the Triton interpreter:
correctness only, and the job says speed was not measured. Where Helion generates code the interpreter does not
implement (its reductions), the job says so instead of blaming the kernel.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from kernelopt.load.helion_file import (
    HelionConfigError,
    config_text,
    helion_kernels,
    is_helion_source,
    pin_configs,
    plain_config,
)
from kernelopt.pipeline.job import run_job
from kernelopt.pipeline.options import JobOptions
from kernelopt.search.generators.helion_config import HelionConfigGenerator, admit_space
from kernelopt.search.generators.helion_space import HelionSpace, HelionSpaceRequest, KernelSpace, helion_space
from tests.conftest import HAS_CUDA

DATA = Path(__file__).parent / "testdata" / "helion"
ADD = DATA / "add_small.py"
REPO = Path(__file__).resolve().parent.parent

needs_interpreter = pytest.mark.skipif(HAS_CUDA, reason="the Triton interpreter path (CPU machines)")


# ---- reading and writing the source (no helion, no import of the file)

def test_helion_kernels_are_found_by_their_decorators_however_helion_is_imported():
    assert [k.name for k in helion_kernels(ADD.read_text())] == ["add"]
    aliased = "import helion as h\n@h.kernel\ndef f(x):\n    return x\n"
    direct = "from helion import kernel\n@kernel(static_shapes=True)\ndef g(x):\n    return x\n"
    assert [k.name for k in helion_kernels(aliased)] == ["f"] and [k.name for k in helion_kernels(direct)] == ["g"]
    triton = (REPO / "benchmarks" / "kernels" / "add_relu_kernel.py").read_text()
    assert not is_helion_source(triton) and not is_helion_source("def broken(:\n")
    assert all(is_helion_source(p.read_text()) for p in (REPO / "benchmarks" / "kernels" / "helion").glob("*.py"))


def test_a_pinned_config_replaces_the_files_own_and_keeps_its_other_settings():
    config = {"block_sizes": [64], "num_warps": 4, "indexing": ["pointer", "pointer"], "range_flattens": [None]}
    source = ("import helion\n@helion.kernel(static_shapes=True, configs=[helion.Config(block_sizes=[8])],\n"
              "               autotune_effort='full')\ndef add(x):\n    return x\n")
    pinned = pin_configs(source, {"add": config})
    (k,) = helion_kernels(pinned)
    assert k.pinned == config  # read back as the literal it wrote
    dec = ast.parse(pinned).body[1].decorator_list[0]
    assert isinstance(dec, ast.Call) and sorted(kw.arg for kw in dec.keywords) == ["config", "static_shapes"]
    assert "def add(x):" in pinned and config_text(config) in pinned
    # a bare decorator becomes a call; a file importing only `kernel` gets `import helion` for helion.Config
    bare = pin_configs("from helion import kernel\n\n@kernel\ndef f(x):\n    return x\n", {"f": {"num_warps": 8}})
    assert bare.startswith("import helion\n") and "@kernel(config=helion.Config(num_warps=8))" in bare
    with pytest.raises(HelionConfigError, match="no @helion.kernel function named g"):
        pin_configs(source, {"g": config})


@pytest.mark.parametrize("value, reason", [
    ({"num_warps": object()}, "not plain data"),
    ({"block_sizes": {"a": 1}}, "not plain data"),
    ({"__import__('os')": 1}, "not an identifier"),
    ({"indexing": "x" * 65}, "not plain data"),
    ({"l": [[[[[1]]]]]}, "not plain data"),
    ({"f": float("nan")}, "not plain data"),
    ([1, 2], "non-empty dict"),
    ({"l": list(range(2000))}, "not plain data"),
])
def test_a_config_that_is_not_plain_data_is_never_written_into_a_source(value, reason):
    with pytest.raises(HelionConfigError, match=reason):
        plain_config(value)
    with pytest.raises(HelionConfigError):
        pin_configs(ADD.read_text(), {"add": value})


def test_the_space_a_child_answers_is_admitted_as_plain_data_only():
    good = KernelSpace("add", {"num_warps": 4}, {"num_warps": 4}, [{"num_warps": 8}], [], 12)
    assert admit_space(HelionSpace([good]))[0].neighbours == [{"num_warps": 8}]
    forged = KernelSpace("add", {"num_warps": 4}, {"num_warps": 4}, [{"num_warps": Path("/etc")}], [], 12)
    with pytest.raises(HelionConfigError, match="not plain data"):
        admit_space(HelionSpace([forged]))
    with pytest.raises(HelionConfigError, match="not an identifier"):
        admit_space(HelionSpace([KernelSpace("a; import os", {"n": 1}, {"n": 1}, [], [], 1)]))
    with pytest.raises(HelionConfigError, match="did not answer a HelionSpace"):
        admit_space({"kernels": []})


# ---- Helion's space, read in a sandboxed child

@needs_interpreter
def test_helions_space_is_read_in_a_child_default_neighbours_and_random_points(tmp_path):
    from kernelopt.isolation import run_in_child

    env = {"TRITON_INTERPRET": "1", "HELION_AUTOTUNE_EFFORT": "none"}
    req = HelionSpaceRequest(str(ADD), device="cpu", n_random=3, depth=2)
    (k,) = admit_space(run_in_child(helion_space, req, timeout_s=300, scratch=tmp_path, env=env, read_only=[ADD]))
    assert k.name == "add" and k.current == k.default and k.n_coordinates > 3
    assert {"block_sizes", "num_warps", "num_stages"} <= set(k.default)
    # every neighbour differs from the default in one coordinate (a list one in one element)
    assert k.neighbours and all(n != k.default for n in k.neighbours)
    assert any(n["block_sizes"] == [k.default["block_sizes"][0] * 2] for n in k.neighbours)
    assert len(k.random) == 3
    # depth 2: the neighbours of every config offered, where the next round may start
    further = {json.dumps(c, sort_keys=True): ns for c, ns in k.further}
    assert [json.loads(c) for c in further] == [*k.neighbours, *k.random, k.default]
    # neighbours of a seed the search names, not of the default: what depth 2 answered for it
    seed = next(n for n in k.neighbours if n["num_warps"] != k.default["num_warps"])
    req = HelionSpaceRequest(str(ADD), device="cpu", seeds={"add": [seed]}, n_random=0)
    (k2,) = admit_space(run_in_child(helion_space, req, timeout_s=300, scratch=tmp_path, env=env, read_only=[ADD]))
    assert any(n["num_warps"] == seed["num_warps"] and n["block_sizes"] != seed["block_sizes"] for n in k2.neighbours)
    assert k2.neighbours == further[json.dumps(seed, sort_keys=True)] and k2.further == []


def test_the_generator_pins_every_kernel_and_never_proposes_the_files_own_config():
    default = {"block_sizes": [32], "num_warps": 4}
    space = HelionSpace([KernelSpace("add", default, default,
                                     [{"block_sizes": [64], "num_warps": 4}, default, {"block_sizes": [16], "num_warps": 4}],
                                     [{"block_sizes": [32], "num_warps": 8}], 2)])
    gen = HelionConfigGenerator()
    from kernelopt.search.generator import KernelTarget

    target = KernelTarget("add_small", ADD.read_text(), "kernel-file", [], {}, [])
    assert gen.applicable(target) == "Helion's configuration space is not available to this job"
    gen.space = lambda seeds, depth, n_random: space
    assert gen.applicable(target) is None
    cands = gen.propose(target, [], [], 8)
    assert [c.params["configs"]["add"] for c in cands] == [
        {"block_sizes": [64], "num_warps": 4}, {"block_sizes": [16], "num_warps": 4},
        {"block_sizes": [32], "num_warps": 8}]
    assert all(helion_kernels(c.source)[0].pinned == c.params["configs"]["add"] for c in cands)
    assert "a neighbour of the file's config" in cands[0].description
    other = KernelTarget("k", (REPO / "benchmarks" / "kernels" / "add_relu_kernel.py").read_text(), "kernel-file",
                         [], {}, [])
    assert gen.applicable(other) == "not a Helion kernel file (no @helion.kernel function)"


# ---- whole jobs on the Triton interpreter

@needs_interpreter
def test_a_helion_job_searches_helions_configs_and_says_speed_was_not_measured(tmp_path):
    run = tmp_path / "run"
    result = run_job(str(ADD), run, JobOptions(generators=["helion_config"], iterations=1, time_budget_s=600))
    assert result.outcome == "fallback" and result.cause.startswith("no-gpu"), result.cause
    assert "passed Gates 1-3 on the Triton interpreter" in result.cause
    report = json.loads((run / "report.json").read_text())
    assert report["helion"]["kernels"] == ["add"] and report["helion"]["file_configs"] == {"add": None}
    assert "HELION_AUTOTUNE_EFFORT=none" in report["helion"]["autotuning"]
    best = report["helion"]["best_configs"]["add"]
    assert best and "block_sizes" in best
    traj = [json.loads(line) for line in (run / "trajectory.jsonl").read_text().splitlines()]
    helion = [t for t in traj if t["generator"] == "helion_config"]
    assert helion and any(t["passed"] for t in helion), helion
    assert "deployed_configs" not in report["helion"]  # nothing was deployed: the original file is kept
    md = (run / "report.md").read_text()
    assert "## Helion kernel" in md and "- The file's configs: `add`: none pinned (Helion default)" in md
    assert "- Best candidate's configs: `add`: `helion.Config(" in md
    assert "- Deployed configs: the file as submitted" in md
    assert (run / "optimized_module.py").read_text() == ADD.read_text()


@needs_interpreter
def test_a_helion_kernel_the_interpreter_cannot_run_ends_no_gpu_saying_why(tmp_path):
    result = run_job(str(DATA / "softmax_small.py"), tmp_path / "run", JobOptions(time_budget_s=300))
    assert result.outcome == "fallback" and result.cause.startswith("no-gpu"), result.cause
    assert "cannot run the Triton code Helion generated" in result.cause and not result.error


@needs_interpreter
def test_a_helion_kernel_that_does_not_compile_fails_in_one_line(tmp_path):
    result = run_job(str(DATA / "does_not_compile.py"), tmp_path / "run", JobOptions(time_budget_s=300))
    assert result.outcome == "failed", (result.outcome, result.cause)
    message = result.error or result.cause
    assert "TorchOpTracingError" in message and "numpy" in message and "Traceback" not in message, message


def test_helion_config_is_a_kernel_file_generator_only():
    from kernelopt.search.registry import GENERATORS, make_kernel_file_generator, searches_model_targets

    assert GENERATORS["helion_config"].targets == ("kernel-file",) and GENERATORS["helion_config"].default
    assert isinstance(make_kernel_file_generator("helion_config"), HelionConfigGenerator)
    # a model job never makes it (nor the graph rewrites, their own stage); the model generators it keeps
    assert not searches_model_targets("helion_config") and not searches_model_targets("graph_rewrite")
    assert searches_model_targets("gemm_fp32") and searches_model_targets("launch_config")


@needs_interpreter
def test_the_llm_generator_is_told_it_rewrites_a_helion_file_and_its_pinned_reply_is_gated(tmp_path, monkeypatch):
    from tests.llm_server import ScriptedLLM, fenced

    reply = pin_configs(ADD.read_text(), {"add": {"block_sizes": [128], "num_warps": 2}})
    with ScriptedLLM([fenced(reply, "Larger tiles, fewer warps.")]) as server:
        for k, v in server.env().items():
            monkeypatch.setenv(k, v)
        run = tmp_path / "run"
        result = run_job(str(ADD), run, JobOptions(generators=["llm"], iterations=1, time_budget_s=600))
    (req,) = server.requests
    text = "\n".join(m["content"] for m in req["body"]["messages"])
    assert "Helion kernel file" in text and "helion.Config" in text and "never autotune" in text
    traj = [json.loads(line) for line in (run / "trajectory.jsonl").read_text().splitlines()]
    assert [t["passed"] for t in traj if t["generator"] == "llm"] == [True], traj
    assert result.outcome == "fallback" and result.cause.startswith("no-gpu"), result.cause


def test_a_helion_file_where_helion_is_not_installed_fails_in_one_line(tmp_path):
    """The orchestrator finds helion missing (here: an import hook refusing it) before any child runs."""
    import subprocess
    import sys

    script = f'''
import sys
class _NoHelion:
    def find_spec(self, name, path=None, target=None):
        if name == "helion" or name.startswith("helion."):
            raise ModuleNotFoundError("No module named 'helion'")
sys.meta_path.insert(0, _NoHelion())
from kernelopt.pipeline.job import run_job
from kernelopt.pipeline.options import JobOptions
r = run_job({str(ADD)!r}, {str(tmp_path / "run")!r}, JobOptions(time_budget_s=120))
print("RESULT", r.outcome, "|", r.error or r.cause)
'''
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=REPO)
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT"))
    assert line == ("RESULT failed | add_small.py is a Helion kernel file, and helion is not installed where this "
                    "job runs (pip install 'kernelopt[helion]')"), proc.stdout + proc.stderr


def test_a_round_starting_where_the_last_child_looked_asks_no_child():
    """One child answers two steps of the walk: a round whose best is a config that child offered takes its
    neighbours from that answer (a child imports Helion and compiles the kernel: 25 s of a 40 s round on an
    H100); a round from anywhere else asks a child again."""
    from kernelopt.search.generator import Attempt, Gate, KernelTarget

    default = {"block_sizes": [32], "num_warps": 4}
    n1, n2, r1 = ({"block_sizes": [64], "num_warps": 4}, {"block_sizes": [32], "num_warps": 8},
                  {"block_sizes": [256], "num_warps": 2})
    n1_next = [{"block_sizes": [128], "num_warps": 4}, {"block_sizes": [64], "num_warps": 8}]
    asked: list[tuple] = []

    def space(seeds, depth, n_random):
        asked.append((seeds, depth, n_random))
        return HelionSpace([KernelSpace("add", default, default, [n1, n2], [r1], 2,
                                        [(n1, n1_next), (n2, []), (r1, []), (default, [n1, n2])])])

    gen = HelionConfigGenerator()
    gen.space = space
    target = KernelTarget("add_small", ADD.read_text(), "kernel-file", [], {}, [])
    first = gen.propose(target, [], [], 8)
    assert [c.params["configs"]["add"] for c in first] == [n1, n2, r1] and asked == [({}, 2, 12)]

    def tried(cands):
        return [Attempt(c, True, Gate.TIMED, "ok") for c in cands]

    second = gen.propose(target, tried(first[:1]), tried(first), 8)
    assert [c.params["configs"]["add"] for c in second] == n1_next and len(asked) == 1  # no child
    assert all("a neighbour of the best" in c.description for c in second)
    outside = {"block_sizes": [128], "num_warps": 4}
    gen.propose(target, tried(second[:1]), tried(first + second), 8)
    assert len(asked) == 2 and asked[1][0] == {"add": [outside]}  # not offered by the first child: asked


def test_the_files_own_configs_list_seeds_the_first_round():
    source = ADD.read_text().replace(
        "@helion.kernel(static_shapes=True)",
        "@helion.kernel(static_shapes=True, configs=[helion.Config(block_sizes=[256], num_warps=8),\n"
        "                                            helion.Config(block_sizes=[128], num_warps=2)])")
    (k,) = helion_kernels(source)
    assert k.listed == ({"block_sizes": [256], "num_warps": 8}, {"block_sizes": [128], "num_warps": 2})
    default = {"block_sizes": [32], "num_warps": 4}
    gen = HelionConfigGenerator()
    gen.space = lambda seeds, depth, n_random: HelionSpace(
        [KernelSpace("add", default, default, [{"block_sizes": [64], "num_warps": 4}], [], 2)])
    from kernelopt.search.generator import KernelTarget

    cands = gen.propose(KernelTarget("add_small", source, "kernel-file", [], {}, []), [], [], 8)
    assert [c.params["configs"]["add"]["block_sizes"] for c in cands] == [[256], [128], [64]]
    assert cands[0].description.startswith("add: one of the file's own configs")
    # the candidate pins one config, the file's list dropped: it never autotunes at load
    (pinned,) = helion_kernels(cands[0].source)
    assert pinned.pinned == {"block_sizes": [256], "num_warps": 8} and pinned.listed == ()


def test_a_kernel_job_whose_budget_leaves_no_search_says_timeout_not_no_candidate(tmp_path):
    """A budget that loading and the Gates 3-4 reserve use up ends `timeout` saying so (under a 35 s budget it
    said "none of 0 candidates passed gates 1-2", no-faster-candidate). Helion's import makes loading slow
    enough (7-9 s here) that 10 s leaves less than the reserve, half the budget."""
    from kernelopt.core.outcome import cause_code

    result = run_job(str(ADD), tmp_path / "job", JobOptions(time_budget_s=10, generators=["helion_config"]))
    assert cause_code(result.cause) == "timeout", result.cause
    report = json.loads((tmp_path / "job" / "report.json").read_text())
    if "search" in report:  # loaded within the budget (not on a machine slower still): the search's own stop
        assert report["search"][0]["attempts"] == 0 and report["verify_reserve"]["seconds"] == 5.0
        assert "stopped the search before its first candidate" in result.cause, result.cause
