"""Static parsing of an Inductor output module: its Triton kernel definitions.

Nothing here imports torch or triton or executes the module: the source is read
with `ast` (the module and each kernel's own source string) plus regular
expressions for the comment block Inductor writes above every kernel. This keeps
the decompose stage usable on a machine without a GPU and safe on any module.

`compiled.decompose` builds the call graph on top of these pieces.
"""
from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any, Iterator

# Kernel name prefix -> kind (docs/architecture.md, 3. Decompose).
PREFIX_KINDS = {
    "triton_poi": "pointwise",
    "triton_red": "reduction",
    "triton_per": "persistent",
    "triton_tem": "template",
    "triton_for": "foreach",
    "triton_spl": "scan",
}
# `@triton_heuristics.<decorator>` -> kind; the decorator wins over the name prefix.
HEURISTIC_KINDS = {
    "pointwise": "pointwise",
    "reduction": "reduction",
    "cooperative_reduction": "reduction",
    "persistent_reduction": "persistent",
    "template": "template",
    "foreach": "foreach",
    "split_scan": "scan",
}

_SOURCE_NODES_RE = re.compile(
    r"#\s*(?:Topologically Sorted )?Source Nodes:\s*\[(?P<nodes>.*?)\],\s*Original ATen:\s*\[(?P<aten>.*?)\]")


@dataclass
class TritonKernel:
    """One `name = async_compile.triton('name', '''source''', ...)` definition.

    Everything is plain data (JSON-friendly): decorator arguments are converted
    with `to_plain`, so `set()` becomes a list and non-literal values (enum
    members, `DeviceProperties(...)`) become their source text.
    """

    name: str
    source: str
    kind: str  # pointwise | reduction | persistent | template | foreach | scan | other
    heuristic: str  # the @triton_heuristics.<x> decorator name ("" when absent)
    aten_ops: list[str] = field(default_factory=list)
    source_nodes: list[str] = field(default_factory=list)
    graph_fragment: str = ""
    signature: dict[str, str] = field(default_factory=dict)
    arg_names: list[str] = field(default_factory=list)
    constexpr_names: list[str] = field(default_factory=list)
    size_hints: dict = field(default_factory=dict)
    inductor_meta: dict = field(default_factory=dict)
    mutated_arg_names: list[str] = field(default_factory=list)
    grid_type: str = ""

    @property
    def launch_params(self) -> list[str]:
        """Parameters the launcher passes positionally: every non-constexpr parameter.

        Constexpr block sizes (XBLOCK, R0_BLOCK) are supplied by the autotuner. A
        parameter Inductor specialised (signature 'constexpr', e.g. `xnumel` of 1)
        is unannotated and still passed. Templates take their grid as
        `extra_launcher_args` after these.
        """
        return [a for a in self.arg_names if a not in self.constexpr_names]

    @property
    def extra_launcher_args(self) -> list[str]:
        extra = self.inductor_meta.get("extra_launcher_args", [])
        return [str(e) for e in extra] if isinstance(extra, list) else []

    def is_pointer(self, param: str) -> bool:
        """Whether `param` is a tensor pointer (by signature, else by Inductor's naming)."""
        ty = self.signature.get(param)
        if ty is not None:
            return ty.startswith("*")
        return bool(re.match(r"(in_out_ptr|in_ptr|out_ptr)\d+$|arg_", param))

    def writes_param(self, param: str) -> bool:
        """Whether the kernel stores through `param`: out_ptrN, in_out_ptrN, or declared mutated."""
        return param.startswith(("out_ptr", "in_out_ptr")) or param in self.mutated_arg_names

    def reads_param(self, param: str) -> bool:
        """Every pointer is read except pure outputs (out_ptrN that are not also mutated inputs)."""
        return self.is_pointer(param) and not (param.startswith("out_ptr") and param not in self.mutated_arg_names)


def to_plain(node: ast.AST) -> Any:
    """A JSON-friendly value for a literal-ish expression; never raises.

    `ast.literal_eval` rejects `set()` and calls such as `DeviceProperties(...)`,
    which Inductor puts in its decorator dicts; those come back as lists and as
    source text. Non-string dict keys (e.g. `(0,)` in triton_meta['configs'])
    become their source text so the result stays JSON-serialisable.
    """
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [to_plain(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[str, Any] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:  # `**spread`
                continue
            key = k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else ast.unparse(k)
            out[key] = to_plain(v)
        return out
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("set", "frozenset"):
        return [to_plain(e) for a in node.args for e in getattr(a, "elts", [a])]
    if isinstance(node, ast.UnaryOp):
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError):
            pass
    return ast.unparse(node)


def dotted(node: ast.AST, tail: bool = False) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None.

    With `tail`, a chain on anything else keeps its attributes after a leading dot
    (`f().cuda.Stream` -> ".cuda.Stream"): a check of what is called must see those too.
    """
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if tail and parts:
        return "." + ".".join(reversed(parts))
    return None


def kernel_kind(name: str, heuristic: str) -> str:
    """The kernel's kind: from the decorator when known, else from the name prefix."""
    if heuristic in HEURISTIC_KINDS:
        return HEURISTIC_KINDS[heuristic]
    return PREFIX_KINDS.get(name[:10], "other")


def parse_comment_block(lines: list[str]) -> tuple[list[str], list[str], str]:
    """(aten_ops, source_nodes, graph_fragment) from the comment lines above a kernel."""
    aten: list[str] = []
    nodes: list[str] = []
    fragment: list[str] = []
    in_fragment = False
    for line in lines:
        text = line.strip()
        m = _SOURCE_NODES_RE.match(text)
        if m:
            nodes = _split_list(m.group("nodes"))
            aten = _split_list(m.group("aten"))
            in_fragment = False
        elif text.startswith("# Graph fragment:"):
            in_fragment = True
        elif in_fragment and text.startswith("#") and not text.startswith("# kernel path:"):
            fragment.append(text[1:])
    return aten, nodes, textwrap.dedent("\n".join(fragment)).strip("\n")


def _split_list(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def comment_block_above(lines: list[str], lineno: int) -> list[str]:
    """The contiguous `#` lines directly above 1-based line `lineno`."""
    block: list[str] = []
    i = lineno - 2
    while i >= 0 and lines[i].lstrip().startswith("#"):
        block.append(lines[i])
        i -= 1
    return list(reversed(block))


def parse_kernel(name: str, source: str, comment: list[str] | None = None) -> TritonKernel:
    """A `TritonKernel` from its source string; fields stay empty where the source is unusual."""
    aten, nodes, fragment = parse_comment_block(comment or [])
    kernel = TritonKernel(name=name, source=source, kind=kernel_kind(name, ""), heuristic="",
                          aten_ops=aten, source_nodes=nodes, graph_fragment=fragment)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return kernel
    fn = _jit_function(tree, name)
    if fn is None:
        return kernel
    kernel.arg_names = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    kernel.constexpr_names = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
                              if a.annotation is not None and ast.unparse(a.annotation).endswith("constexpr")]
    for deco in fn.decorator_list:
        if isinstance(deco, ast.Call) and (d := dotted(deco.func)) and d.startswith("triton_heuristics."):
            kernel.heuristic = d.split(".", 1)[1]
            _read_decorator(kernel, {k.arg: k.value for k in deco.keywords if k.arg})
    kernel.kind = kernel_kind(name, kernel.heuristic)
    return kernel


def _jit_function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    """The `@triton.jit` function, preferring the one named like the kernel."""
    fns = [n for n in tree.body if isinstance(n, ast.FunctionDef)
           and any((dotted(d.func if isinstance(d, ast.Call) else d) or "").endswith("jit") for d in n.decorator_list)]
    for fn in fns:
        if fn.name == name:
            return fn
    return fns[0] if fns else None


def _read_decorator(kernel: TritonKernel, kwargs: dict[str, ast.expr]) -> None:
    """Fill size hints, signature and inductor_meta from the heuristics decorator's keywords."""
    if "size_hints" in kwargs:
        hints = to_plain(kwargs["size_hints"])
        # Older Inductor passed a list; keep it as a dict keyed by position.
        kernel.size_hints = hints if isinstance(hints, dict) else {str(i): h for i, h in enumerate(hints or [])}
    meta = kwargs.get("triton_meta")
    if isinstance(meta, ast.Dict):
        for k, v in zip(meta.keys, meta.values, strict=True):
            if isinstance(k, ast.Constant) and k.value == "signature" and isinstance(v, ast.Dict):
                kernel.signature = _signature(v, kernel.arg_names)
    if "inductor_meta" in kwargs:
        imeta = to_plain(kwargs["inductor_meta"])
        kernel.inductor_meta = imeta if isinstance(imeta, dict) else {}
    mutated = kernel.inductor_meta.get("mutated_arg_names", [])
    kernel.mutated_arg_names = [str(m) for m in mutated] if isinstance(mutated, list) else []
    grid_type = kernel.inductor_meta.get("grid_type", "")
    kernel.grid_type = grid_type if isinstance(grid_type, str) else ""


def _signature(node: ast.Dict, arg_names: list[str]) -> dict[str, str]:
    """Parameter name -> Triton type; older Inductor keyed the signature by parameter index."""
    sig: dict[str, str] = {}
    for k, v in zip(node.keys, node.values, strict=True):
        if not (isinstance(k, ast.Constant) and isinstance(v, ast.Constant)):
            continue
        key = k.value
        if isinstance(key, int) and 0 <= key < len(arg_names):
            key = arg_names[key]
        sig[str(key)] = str(v.value)
    return sig


def find_kernels(tree: ast.Module, lines: list[str]) -> dict[str, TritonKernel]:
    """Every module-level `x = async_compile.triton('x', '''src''', ...)`, in definition order."""
    kernels: dict[str, TritonKernel] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        call = node.value
        if dotted(call.func) != "async_compile.triton" or len(node.targets) != 1:
            continue
        if not isinstance(node.targets[0], ast.Name):
            continue
        var = node.targets[0].id
        strings = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if len(strings) < 2:
            continue
        kernels[var] = parse_kernel(var, strings[1], comment_block_above(lines, node.lineno))
    return kernels


def find_call(tree: ast.Module) -> ast.FunctionDef | None:
    """`call`: `Runner.call(self, args)` (torch >= 2.9) or module-level `call(args)` (older)."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "call":
                    return item
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            return node
    return None


# -- small AST helpers shared with compiled.decompose --------------------------
def flatten_block(stmts: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements in program order, entering `with torch.cuda._DeviceGuard(0):` and other blocks."""
    for s in stmts:
        if isinstance(s, (ast.With, ast.AsyncWith)):
            yield from flatten_block(s.body)
        elif isinstance(s, (ast.If, ast.For, ast.While)):
            yield from flatten_block(s.body)
            yield from flatten_block(s.orelse)
        elif isinstance(s, ast.Try):
            yield from flatten_block(s.body + s.orelse + s.finalbody)
        else:
            yield s


def example_input_dtypes(tree: ast.Module) -> dict[str, str]:
    """{graph input name: torch dtype name} from the module's `get_args()`.

    Inductor writes `argN_M = rand_strided(shape, stride, device=..., dtype=torch.float32)`
    there for every argument of `call()`: the one place the source states their dtypes
    (`assert_size_stride` gives shapes and strides only).
    """
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_args"), None)
    found: dict[str, str] = {}
    for node in ast.walk(fn) if fn is not None else ():
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call) and (dotted(node.value.func) or "").endswith("rand_strided")):
            dtype = next((k.value for k in node.value.keywords if k.arg == "dtype"), None)
            if dtype is not None:
                found[node.targets[0].id] = (dotted(dtype) or "").removeprefix("torch.")
    return found


def int_literal(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


def int_tuple(node: ast.AST) -> list[int] | None:
    """A literal tuple of ints (a shape or stride), else None (e.g. symbolic sizes)."""
    if isinstance(node, (ast.Tuple, ast.List)):
        vals = [int_literal(e) for e in node.elts]
        return None if any(v is None for v in vals) else vals  # type: ignore[return-value]
    return None


def op_name(func: str) -> str:
    """The operator of a library target: `torch.ops.aten.copy_.default` -> `copy_`."""
    parts = func.split(".")
    if func.startswith("torch.ops.") and len(parts) >= 4:
        return parts[3]
    if parts[0] in ("aten", "prims", "inductor_ops", "_quantized") and len(parts) >= 2:
        return parts[1]
    return parts[-1]
