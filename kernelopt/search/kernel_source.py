"""Reading an Inductor Triton kernel's module source and wrapping it as a candidate.

Inductor emits each kernel as a small module: imports, a
`@triton_heuristics.<kind>(size_hints=..., triton_meta=..., inductor_meta=...)`
decorator (its autotuner) and the `@triton.jit` function. A candidate is the
same jit function, verbatim, with the autotuner replaced by a plain launcher
`run(*args, stream=None)` fixed to one launch configuration. Everything here
works on the source text with `ast` (no Inductor objects, no GPU), so other
generators (LLM agents) can reuse `standalone_module` for their own kernels.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Sequence, Union, cast

# A grid axis: (name of the numel launch argument, block size) -> cdiv(numel, block),
# or a plain int for a fixed extent. Axes are x, y, z in order.
GridAxis = Union[tuple[str, int], int]

_MASK_PREFIXES = ("x", "y", "z", "r0_", "r1_")


@dataclass
class KernelSource:
    """What the launcher and the search need to know about one kernel."""

    name: str
    source: str
    heuristic: str  # decorator name: pointwise | reduction | persistent_reduction | template | ...
    size_hints: dict = field(default_factory=dict)
    triton_meta: dict = field(default_factory=dict)
    inductor_meta: dict = field(default_factory=dict)
    params: list[str] = field(default_factory=list)  # every jit parameter, in order
    constexpr_params: list[str] = field(default_factory=list)  # annotated tl.constexpr
    launch_params: list[str] = field(default_factory=list)  # positional launch args (pointers, numels)
    numel_params: list[str] = field(default_factory=list)  # the trailing *numel launch args
    body_ints: dict[str, int] = field(default_factory=dict)  # top-level `NAME = <int>` (hard-coded numels, fixed blocks)
    masked: dict[str, bool] = field(default_factory=dict)  # prefix -> a runtime bounds mask exists
    program_id_axes: set[int] = field(default_factory=set)
    has_loop: bool = False  # a `for` in the body: only then does num_stages matter

    def numel(self, prefix: str, runtime: dict[str, int]) -> int | None:
        """The numel of a dimension: hard-coded in the body first, else the launch's value."""
        key = f"{prefix}numel"
        return self.body_ints.get(key, runtime.get(key))


def _literal(node: ast.AST) -> Any:
    """Like ast.literal_eval, but total: calls and names become descriptive values.

    triton_meta holds `DeviceProperties(...)` and inductor_meta `set()`; those
    must not make the whole decorator unreadable.
    """
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Dict):
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values, strict=True) if k is not None}
    if isinstance(node, ast.List):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_literal(e) for e in node.elts)
    if isinstance(node, ast.Set):
        return {_literal(e) for e in node.elts}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _literal(node.operand)
        return -value if isinstance(value, (int, float)) else ast.unparse(node)
    if isinstance(node, ast.Call):
        fn = ast.unparse(node.func)
        if fn == "set" and not node.args and not node.keywords:
            return set()
        out: dict[str, Any] = {"__call__": fn}
        out.update({kw.arg: _literal(kw.value) for kw in node.keywords if kw.arg})
        return out
    return ast.unparse(node)  # names and attributes: ReductionHint.INNER, __file__


def _is_jit(dec: ast.expr) -> bool:
    target = dec.func if isinstance(dec, ast.Call) else dec
    return ast.unparse(target) in ("triton.jit", "jit")


def _heuristic_decorator(dec: ast.expr) -> str | None:
    target = dec.func if isinstance(dec, ast.Call) else dec
    text = ast.unparse(target)
    return text.split(".", 1)[1] if text.startswith("triton_heuristics.") else None


def _find_kernel(tree: ast.Module, name: str | None) -> ast.FunctionDef:
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and any(_is_jit(d) for d in n.decorator_list)]
    if name is not None:
        funcs = [f for f in funcs if f.name == name]
    if len(funcs) != 1:
        raise ValueError(f"expected one @triton.jit function{f' named {name}' if name else ''}, found {len(funcs)}")
    return funcs[0]


def _int_value(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


def parse_kernel(source: str, name: str | None = None) -> KernelSource:
    """Parse one Inductor kernel module source (the text inside async_compile.triton)."""
    tree = ast.parse(source)
    fn = _find_kernel(tree, name)
    info = KernelSource(name=fn.name, source=source, heuristic="")
    for dec in fn.decorator_list:
        kind = _heuristic_decorator(dec)
        if kind is None:
            continue
        info.heuristic = kind
        if isinstance(dec, ast.Call):
            kwargs = {kw.arg: _literal(kw.value) for kw in dec.keywords if kw.arg}
            info.size_hints = kwargs.get("size_hints") or {}
            info.triton_meta = kwargs.get("triton_meta") or {}
            info.inductor_meta = kwargs.get("inductor_meta") or {}
    args = fn.args.posonlyargs + fn.args.args
    info.params = [a.arg for a in args]
    info.constexpr_params = [a.arg for a in args if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)]
    info.launch_params = [p for p in info.params if p not in info.constexpr_params]
    # Inductor's launch passes pointers and then the numels; scalar args sit in between.
    for p in reversed(info.launch_params):
        if not p.endswith("numel"):
            break
        info.numel_params.insert(0, p)
    for stmt in fn.body:  # top level only: `xnumel = 256`, `R0_BLOCK: tl.constexpr = 512`
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target, value = stmt.targets[0].id, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            target, value = stmt.target.id, stmt.value
        else:
            continue
        if (v := _int_value(value)) is not None:
            info.body_ints[target] = v
    for node in ast.walk(fn):
        if isinstance(node, (ast.For, ast.While)):
            info.has_loop = True
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "tl.program_id":
            axis = _int_value(node.args[0]) if node.args else None
            info.program_id_axes.add(-1 if axis is None else axis)  # -1: an axis we cannot read
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id.endswith("mask") and t.id[:-4] in _MASK_PREFIXES:
                    prefix = t.id[:-4]
                    # `xmask = xindex < xnumel` is a real bounds check; `tl.full(..., True)`
                    # means Inductor proved its block sizes divide the numel.
                    info.masked[prefix] = info.masked.get(prefix, False) or isinstance(node.value, ast.Compare)
    return info


# Emitted into candidates that use libdevice. Triton's interpreter cannot run
# libdevice's extern calls (they return None there), so under TRITON_INTERPRET=1
# libdevice is routed to tl.math or a short tl expression; on a GPU the branch
# is never taken and the kernel uses Triton's libdevice as Inductor wrote it.
_INTERPRETER_LIBDEVICE = """\
if _os.environ.get('TRITON_INTERPRET', '0') == '1':
    import triton.language as _tl

    class _InterpreterLibdevice:
        _composed = {
            'tanh': lambda x: 1.0 - 2.0 / (_tl.math.exp(2.0 * x) + 1.0),
            'log1p': lambda x: _tl.math.log(1.0 + x),
            'expm1': lambda x: _tl.math.exp(x) - 1.0,
            'tan': lambda x: _tl.math.sin(x) / _tl.math.cos(x),
            'sinh': lambda x: (_tl.math.exp(x) - _tl.math.exp(-x)) * 0.5,
            'cosh': lambda x: (_tl.math.exp(x) + _tl.math.exp(-x)) * 0.5,
            'log10': lambda x: _tl.math.log(x) * 0.4342944819032518,
            'isnan': lambda x: x != x,
            'trunc': lambda x: _tl.where(x < 0, _tl.math.ceil(x), _tl.math.floor(x)),
        }

        def __getattr__(self, name):
            if name in self._composed:
                return self._composed[name]
            fn = getattr(_tl.math, name, None)  # erf, exp, rsqrt, sqrt, log, ...
            if fn is None:
                raise AttributeError(f'libdevice.{name} has no Triton-interpreter equivalent')
            return fn

    libdevice = _InterpreterLibdevice()"""


def _names_used(nodes: Sequence[ast.AST]) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}


def _last_line(node: ast.stmt | ast.expr) -> int:
    """A parsed node's last line (ast.parse sets `end_lineno` on every statement and expression)."""
    return cast(int, node.end_lineno)


def kernel_module_without_autotuner(kernel_source: str, kernel_name: str) -> str:
    """The kernel module minus Inductor's autotuning decorator, runnable on CUDA and the interpreter.

    The jit function stays verbatim (triton.jit reads it back with inspect, and
    a reviewer diffs it against Inductor's). Imported names only the decorator
    used are dropped; `set_driver_to_gpu()` is skipped under TRITON_INTERPRET=1,
    where there is no GPU backend to select and it raises.
    """
    lines = kernel_source.splitlines()
    tree = ast.parse(kernel_source)
    fn = _find_kernel(tree, kernel_name)
    dropped = [d for d in fn.decorator_list if _heuristic_decorator(d) is not None]
    kept_nodes: list[ast.AST] = [n for n in tree.body
                                 if n is not fn and not isinstance(n, (ast.Import, ast.ImportFrom))]
    kept_nodes += [d for d in fn.decorator_list if d not in dropped]
    kept_nodes += fn.args.args
    kept_nodes += fn.body
    used = _names_used(kept_nodes) | {"triton", "tl"}
    decorator_only = _names_used(dropped) - used

    # Edit by line ranges so everything else (blank lines, comments) stays as Inductor wrote it.
    edits: dict[int, tuple[int, list[str]]] = {}  # first line -> (last line, replacement)
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            keep = [a for a in node.names if (a.asname or a.name.split(".")[0]) not in decorator_only]
            text = lines[node.lineno - 1:node.end_lineno]
            if len(keep) != len(node.names):
                node.names = keep
                text = [ast.unparse(node)] if keep else []
            if any((a.asname or a.name) == "libdevice" for a in keep):
                text = text + _INTERPRETER_LIBDEVICE.splitlines()
            edits[node.lineno] = (_last_line(node), text)
        elif isinstance(node, ast.Expr) and ast.unparse(node).endswith("set_driver_to_gpu()"):
            edits[node.lineno] = (_last_line(node), [
                "if _os.environ.get('TRITON_INTERPRET', '0') != '1':", "    " + ast.unparse(node)])
    for d in dropped:
        edits[d.lineno] = (_last_line(d), [])
    out: list[str] = []
    i = 1
    while i <= len(lines):
        if i in edits:
            last, replacement = edits[i]
            out.extend(replacement)
            i = last + 1
        else:
            out.append(lines[i - 1])
            i += 1
    return "import os as _os\n" + "\n".join(out) + "\n"


def standalone_module(kernel_source: str, kernel_name: str, config: dict, numel_args: list[str],
                      grid: Sequence[GridAxis]) -> str:
    """A candidate module: the jit kernel plus `run(*args, stream=None)` for one launch config.

    `config` is {"kwargs": {constexpr: value}, "num_warps": n, "num_stages": s};
    `numel_args` names the trailing numel launch arguments in signature order;
    `grid` gives the x, y, z extents as (numel_arg, block) pairs or ints.
    `stream` is accepted for Inductor's call signature and ignored: Triton
    launches on torch's current stream, which is the stream Inductor passes.
    """
    fn = _find_kernel(ast.parse(kernel_source), kernel_name)
    positional = [a.arg for a in fn.args.posonlyargs + fn.args.args
                  if not (a.annotation is not None and "constexpr" in ast.unparse(a.annotation))]
    if list(positional[len(positional) - len(numel_args):]) != list(numel_args):
        raise ValueError(f"{kernel_name}: numel args {numel_args} are not the trailing launch args {positional}")
    axes = []
    for axis in list(grid) + [1] * (3 - len(grid)):
        if isinstance(axis, int):
            axes.append(str(axis))
        else:
            numel, block = axis
            if numel not in numel_args:
                raise ValueError(f"{kernel_name}: grid uses {numel}, not a numel argument")
            axes.append(numel if block == 1 else f"(({numel}) + {block} - 1) // {block}")
    launch_kwargs = ", ".join(f"{k}={int(v)}" for k, v in config.get("kwargs", {}).items())
    launch_kwargs += (", " if launch_kwargs else "") + (
        f"num_warps={int(config.get('num_warps', 4))}, num_stages={int(config.get('num_stages', 1))}")
    unpack = f"    {', '.join(numel_args)}, = args[{len(positional) - len(numel_args)}:]\n" if numel_args else ""
    return (
        kernel_module_without_autotuner(kernel_source, kernel_name)
        + f"\n\n# Launch config: {launch_kwargs}\n"
        + "def run(*args, stream=None):\n"
        + f"    if len(args) != {len(positional)}:\n"
        + f"        raise TypeError(f'{kernel_name}.run takes {len(positional)} launch arguments "
        + f"({', '.join(positional)}), got {{len(args)}}')\n"
        + unpack
        + f"    grid = ({', '.join(axes)})\n"
        + "    if min(grid) <= 0:\n"
        + "        return  # an empty launch: nothing to compute\n"
        + f"    {kernel_name}[grid](*args, {launch_kwargs})\n"
    )
