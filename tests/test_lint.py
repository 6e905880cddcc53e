"""ruff (pyflakes and pycodestyle's error classes) on the whole tree, mypy on the typed modules.

Both are configured in pyproject.toml, so `ruff check` and `mypy` at the root run exactly this.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing():
    pytest.importorskip("ruff")
    proc = _run("ruff", "check", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_finds_nothing_in_the_typed_modules():
    pytest.importorskip("mypy")
    proc = _run("mypy")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success" in proc.stdout


# --------------------------------------------------------------------------- import layering

def _is_module(dotted: str) -> bool:
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _internal_imports() -> list[tuple[str, str, int]]:
    """(importing module, imported kernelopt module, line) for every import of the package's own code,
    at module level or inside a function (`if TYPE_CHECKING:` blocks left out: they never run)."""
    import ast

    found = []
    for path in sorted((ROOT / "kernelopt").rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        if "__pycache__" in rel.parts or "examples" in rel.parts:
            continue
        module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        tree = ast.parse(path.read_text())
        skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                for n in ast.walk(node)}
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from package import module` imports the module; `from module import name`, the module
                names = [f"{node.module}.{a.name}" if _is_module(f"{node.module}.{a.name}") else node.module
                         for a in node.names]
            else:
                continue
            found += [(module, n, node.lineno) for n in names if n.startswith("kernelopt.")]
    return found


def test_every_subpackage_imports_only_its_own_layer_and_those_below():
    """kernelopt/core/layout.py orders the subpackages; nothing imports a later one (so no folder cycle)."""
    from kernelopt.core.layout import PACKAGES

    rank = {name: i for i, name in enumerate(PACKAGES)}
    upward = sorted({f"{src}:{line} imports {dst}" for src, dst, line in _internal_imports()
                     if src.count(".") >= 1 and dst.split(".")[1] in rank and src.split(".")[1] in rank
                     and rank[dst.split(".")[1]] > rank[src.split(".")[1]]})
    assert not upward, "\n".join(upward)


def test_no_import_cycle_between_modules():
    modules = {".".join(p.relative_to(ROOT).with_suffix("").parts) for p in (ROOT / "kernelopt").rglob("*.py")}
    modules = {m.removesuffix(".__init__") for m in modules}

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for src, dst, _ in _internal_imports():
        target = resolve(dst)
        # a module's own package (its __init__) runs before it anyway: not an edge of a cycle
        if target and target != src and not src.startswith(target + "."):
            graph.setdefault(src, set()).add(target)
    done: set[str] = set()

    def cycle_from(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return path[path.index(node):] + [node]
        if node in done:
            return None
        for nxt in sorted(graph.get(node, ())):
            found = cycle_from(nxt, path + [node])
            if found:
                return found
        done.add(node)
        return None

    cycles = [c for c in (cycle_from(m, []) for m in sorted(graph)) if c]
    assert not cycles, " -> ".join(cycles[0])


def test_the_processes_that_never_run_a_kernel_start_without_torch():
    """The job's orchestrator, the API, the worker's main process and the CLI import no torch or triton: their
    children do. (Why some imports of the engine stay inside functions.)"""
    probe = ("import sys\n"
             "import kernelopt.pipeline.job, kernelopt.worker.execute, kernelopt.cli.main, kernelopt.search.registry\n"
             "heavy = sorted(m for m in ('torch', 'triton') if m in sys.modules)\n"
             "try:\n"
             "    import kernelopt.api.app, kernelopt.worker.celery_app  # the service extras, where installed\n"
             "except ImportError as exc:\n"
             "    print('no service extras:', exc)\n"
             "heavy += sorted(m for m in ('torch', 'triton') if m in sys.modules and m not in heavy)\n"
             "print('heavy', heavy)\n")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "heavy []" in proc.stdout, proc.stdout


def test_nothing_imports_a_subpackage_by_its_bare_name():
    """`kernelopt.verify`, never `verify`: the checkout's top-level links (api/, worker/, agents/, verify/,
    migrations/) would import a second copy of the same files under another name."""
    import ast

    from kernelopt.core.layout import PACKAGES

    offenders = []
    for top in ("kernelopt", "tests", "benchmarks", "scripts"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if "results" in path.parts or "__pycache__" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                         [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
                offenders += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names
                              if n.split(".")[0] in PACKAGES]
    assert not offenders, offenders
