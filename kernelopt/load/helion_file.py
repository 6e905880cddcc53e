"""Helion kernel files, read as text: which functions are `@helion.kernel`s, and their configs pinned.

A Helion kernel file has the shape of a Triton kernel file (`launch`, `reference`, `get_inputs`); its
`launch` calls one or more `@helion.kernel` functions, which Helion compiles to Triton under a
configuration (block sizes, loop orders, indexing, pid type, warps, stages, ...). Nothing here imports
helion or the file: the trusted side reads the source's syntax only, and writes candidate files whose
decorators pin a configuration (`config=helion.Config(**{...})`), so a candidate never autotunes at load.

Configurations arrive from a sandboxed child (search/generators/helion_space.py) and are written into
source: `plain_config` admits plain data only (a dict of identifiers to JSON scalars and lists of them).
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

#: the decorator keywords a pinned config replaces (a file's own configs, or its autotuning settings)
CONFIG_KEYWORDS = ("config", "configs", "autotune_effort", "use_default_config")
MAX_CONFIG_CHARS = 4000
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class HelionConfigError(ValueError):
    """A configuration that is not plain data (it is never written into a source)."""


@dataclass(frozen=True)
class HelionKernel:
    """One `@helion.kernel` function of a file: where its decorator is, and the config it pins (if a literal)."""

    name: str
    decorator_line: int  # 1-based, first line of the decorator expression
    decorator_end_line: int
    decorator_col: int  # of the expression (after the `@`)
    decorator_end_col: int
    pinned: dict | None  # `config=helion.Config(...)` with literal keywords, as a dict
    listed: tuple = ()  # `configs=[helion.Config(...), ...]`: each literal one, as a dict (the search's seeds)


def _is_helion_kernel(node: ast.expr, aliases: set[str], direct: set[str]) -> bool:
    func = node.func if isinstance(node, ast.Call) else node
    if isinstance(func, ast.Attribute) and func.attr in ("kernel", "jit") and isinstance(func.value, ast.Name):
        return func.value.id in aliases
    return isinstance(func, ast.Name) and func.id in direct


def _aliases(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Names bound to the helion module (`import helion as h`) and to helion.kernel (`from helion import kernel`)."""
    modules, kernels = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == "helion"}
        elif isinstance(node, ast.ImportFrom) and node.module == "helion":
            kernels |= {a.asname or a.name for a in node.names if a.name in ("kernel", "jit")}
    return modules, kernels


def _config_literal(node: ast.expr) -> dict | None:
    """`helion.Config(k=literal, ...)` as a dict of plain data (None for anything else)."""
    if not isinstance(node, ast.Call) or node.args:
        return None
    try:
        return plain_config({k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg})
    except (ValueError, TypeError, SyntaxError, HelionConfigError):
        return None


def _literal_config(call: ast.Call) -> dict | None:
    kw = next((k for k in call.keywords if k.arg == "config"), None)
    return None if kw is None else _config_literal(kw.value)


def _literal_configs(call: ast.Call) -> tuple:
    kw = next((k for k in call.keywords if k.arg == "configs"), None)
    if kw is None or not isinstance(kw.value, (ast.List, ast.Tuple)):
        return ()
    return tuple(c for c in map(_config_literal, kw.value.elts) if c is not None)


def _decorated(tree: ast.Module) -> list[tuple[ast.FunctionDef, ast.expr]]:
    """Each top-level function with its `@helion.kernel` decorator expression, in order."""
    modules, direct = _aliases(tree)
    if not modules and not direct:
        return []
    return [(node, dec) for node in tree.body if isinstance(node, ast.FunctionDef)
            for dec in node.decorator_list if _is_helion_kernel(dec, modules, direct)]


def _kernel(node: ast.FunctionDef, dec: ast.expr) -> HelionKernel:
    call = dec if isinstance(dec, ast.Call) else None
    return HelionKernel(node.name, dec.lineno, dec.end_lineno or dec.lineno, dec.col_offset, dec.end_col_offset or 0,
                        _literal_config(call) if call else None, _literal_configs(call) if call else ())


def helion_kernels(source: str) -> list[HelionKernel]:
    """The file's top-level `@helion.kernel` functions, in order (an empty list for any other file)."""
    return [_kernel(node, dec) for node, dec in _decorated(ast.parse(source))]


def is_helion_source(source: str) -> bool:
    try:
        return bool(helion_kernels(source))
    except SyntaxError:
        return False


def is_helion_file(path: str) -> bool:
    """Whether the file at `path` is a Helion kernel file (False for one that cannot be read: the load says why)."""
    try:
        with open(path, encoding="utf-8") as f:
            return is_helion_source(f.read())
    except (OSError, UnicodeDecodeError, ValueError):
        return False


def helion_installed() -> bool:
    """Whether this interpreter (the job's children run the same one) can import helion; found, not imported."""
    import importlib.util

    try:
        return importlib.util.find_spec("helion") is not None
    except (ImportError, ValueError):
        return False


def _plain(value: object, depth: int) -> bool:
    if value is None or isinstance(value, (bool, int, str)):
        return not isinstance(value, str) or len(value) <= 64
    if isinstance(value, float):
        return value == value and abs(value) != float("inf")
    if isinstance(value, list) and depth < 4:
        return len(value) <= 64 and all(_plain(v, depth + 1) for v in value)
    return False


def plain_config(value: object) -> dict:
    """`value` as a configuration to write into a source, if it is plain data; HelionConfigError otherwise."""
    if not isinstance(value, dict) or not value:
        raise HelionConfigError(f"a configuration is a non-empty dict, not {type(value).__name__}")
    for key, item in value.items():
        if not isinstance(key, str) or not _IDENTIFIER.match(key):
            raise HelionConfigError(f"configuration key {str(key)[:40]!r} is not an identifier")
        if not _plain(item, 0):
            raise HelionConfigError(f"configuration value of {key} is not plain data")
    if len(repr(value)) > MAX_CONFIG_CHARS:
        raise HelionConfigError(f"configuration longer than {MAX_CONFIG_CHARS} characters")
    return dict(value)


def config_text(config: dict) -> str:
    """A configuration as Helion's own notation, `helion.Config(block_sizes=[64], num_warps=4)`."""
    return "helion.Config(" + ", ".join(f"{k}={v!r}" for k, v in sorted(config.items())) + ")"


def _decorator(tree_dec: ast.expr, config: dict) -> str:
    """The decorator expression with `config=` pinned and the file's own configs/autotune settings dropped."""
    call = tree_dec if isinstance(tree_dec, ast.Call) else ast.Call(func=tree_dec, args=[], keywords=[])
    kept = [k for k in call.keywords if k.arg not in CONFIG_KEYWORDS]
    parts = [ast.unparse(a) for a in call.args] + [ast.unparse(k) for k in kept] + [f"config={config_text(config)}"]
    return f"{ast.unparse(call.func)}({', '.join(parts)})"


def pin_configs(source: str, configs: dict[str, dict]) -> str:
    """`source` with each named kernel's decorator pinned to its configuration (plain data, checked here)."""
    configs = {name: plain_config(c) for name, c in configs.items()}
    tree = ast.parse(source)
    lines = source.splitlines(True)
    edits = [(_kernel(node, dec), _decorator(dec, configs[node.name])) for node, dec in _decorated(tree)
             if node.name in configs]
    missing = set(configs) - {k.name for k, _ in edits}
    if missing:
        raise HelionConfigError(f"no @helion.kernel function named {', '.join(sorted(missing))}")
    for k, text in sorted(edits, key=lambda e: e[0].decorator_line, reverse=True):
        first, last = lines[k.decorator_line - 1], lines[k.decorator_end_line - 1]
        lines[k.decorator_line - 1:k.decorator_end_line] = [first[:k.decorator_col] + text + last[k.decorator_end_col:]]
    out = "".join(lines)
    if "helion" not in _aliases(tree)[0]:  # `helion.Config` needs the module's own name
        out = _add_import(out)
    return out


def _add_import(source: str) -> str:
    """`import helion` after the module's docstring and `from __future__` imports."""
    tree = ast.parse(source)
    after = 0
    for node in tree.body:
        is_doc = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        if is_doc or (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            after = node.end_lineno or node.lineno
        else:
            break
    lines = source.splitlines(True)
    return "".join(lines[:after] + ["import helion\n"] + lines[after:])
