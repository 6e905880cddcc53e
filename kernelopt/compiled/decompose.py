"""Stage 3, decompose: an Inductor output module's source -> a graph of kernels and buffers.

The module is parsed, never executed (no GPU, no torch import): kernel
definitions come from `compiled.module_parse`, and `call()` is walked statement
by statement, in program order, into `Step`s:

- *triton*: `triton_x_0.run(buf1, arg1_1, 1024, 8192, stream=stream0)`. The
  buffers it writes are the arguments bound to the kernel's `out_ptrN` /
  `in_out_ptrN` parameters (or declared in `mutated_arg_names`), so data flow is
  known without running anything.
- *library*: vendor and fallback calls (`extern_kernels.*`, `torch.ops.*`,
  `aten.*`, ...). These are **preserved**: `replaceable` is False and they are
  never handed to a candidate generator (docs/architecture.md, 3. Decompose). They also end
  fusible groups.
- *cpp*: a C++ kernel of Inductor's CPU backend, `cpp_fused_gelu_0(buf1)`,
  defined by `async_compile.cpp_pybinding([...types], src)`: non-`const`
  pointer parameters are written, `const` ones read.
- *alloc*: `empty_strided_cuda(...)`; it defines a buffer but writes no data.
- *other*: any statement not understood; recorded rather than crashing.

Pure bookkeeping (argument unpacking, asserts, `del`, streams, device guards,
aliases) produces no step. Aliases (`buf4 = buf1; del buf1  # reuse`,
`reinterpret_tensor(buf0, ...)`, `alloc_from_pool(pool0, ...)`, `buf[0]`) are
resolved, so every read/write names the underlying buffer.
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import asdict, dataclass, field
from typing import cast

from kernelopt.compiled.module_parse import (
    TritonKernel,
    dotted,
    example_input_dtypes,
    find_call,
    find_kernels,
    flatten_block,
    int_literal,
    int_tuple,
    op_name,
)

ALLOC_FUNCS = {
    "empty_strided_cuda", "empty_strided_cpu", "empty_strided_xpu", "empty_strided_mtia",
    "empty_strided_cpu_pinned", "empty_strided_p2p", "empty_strided", "torch.empty_strided",
    "torch.empty", "torch.zeros",
}
# Functions whose result views the buffer given as their first argument.
VIEW_FUNCS = {"reinterpret_tensor", "as_strided", "torch.as_strided", "alloc_from_pool",
              "torch.ops.inductor._alloc_from_pool", "torch.ops.aten._reinterpret_tensor"}
VIEW_METHODS = {"as_strided", "view", "reshape", "permute", "t", "transpose", "expand", "unsqueeze", "squeeze"}
BOOKKEEPING_CALLS = {
    "assert_size_stride", "assert_alignment", "args.clear", "torch.cuda.set_device",
    "run_intermediate_hooks", "get_raw_stream", "torch.cuda.synchronize", "gc.collect",
}
LIBRARY_PREFIXES = ("extern_kernels.", "torch.ops.", "aten.", "prims.", "inductor_ops.", "_quantized.",
                    "torch._C._nn.", "torch.nn.functional.")
# Names Inductor gives tensors, for references to module-level constants never bound in call().
_TENSOR_NAME_RE = re.compile(r"^(buf\d+|arg\d+_\d+|primals_\d+|tangents_\d+|_tensor_constant\d+|_frozen_param\d+|"
                             r"pool\d+|constant\d+)$")


@dataclass
class Step:
    """One operation of `call()`, in program order.

    `numels` holds the integer literals bound to `*numel` parameters (xnumel,
    r0_numel, ...); template launches instead pass a fixed grid (the kernel's
    `extra_launcher_args`), which goes to `grid`. For an unknown kernel all
    trailing integer literals go to `numels`.
    """

    index: int
    kind: str  # "triton" | "cpp" | "library" | "alloc" | "other"
    target: str  # kernel name, or e.g. "extern_kernels.addmm" / "torch.ops.aten.convolution.default"
    args: list[str] = field(default_factory=list)
    kwargs: dict[str, str] = field(default_factory=dict)
    reads: list[str] = field(default_factory=list)  # base buffer names
    writes: list[str] = field(default_factory=list)  # base buffer names whose data it stores
    numels: list[int] = field(default_factory=list)
    line: int = 0
    grid: list[int] = field(default_factory=list)
    defines: list[str] = field(default_factory=list)  # names the statement binds
    replaceable: bool = False  # only Triton launches may be replaced by a search candidate


# Library operators whose output has their tensor inputs' dtype (when those agree).
SAME_DTYPE_OPS = frozenset({"convolution", "mm", "addmm", "bmm", "baddbmm", "_convolution"})


@dataclass
class Buffer:
    """A tensor storage of the graph, under its base name (aliases listed)."""

    name: str
    shape: list[int] | None = None
    stride: list[int] | None = None
    dtype: str | None = None
    producers: list[int] = field(default_factory=list)  # step indexes writing it (allocs excluded)
    consumers: list[int] = field(default_factory=list)  # step indexes reading it
    is_graph_input: bool = False
    is_graph_output: bool = False
    is_module_constant: bool = False  # a module global read by call() (not an argument)
    aliases: list[str] = field(default_factory=list)

    @property
    def is_intermediate(self) -> bool:
        """Produced and consumed inside the graph only: a fusion may keep it out of memory."""
        return not (self.is_graph_input or self.is_graph_output or self.is_module_constant)


@dataclass
class KernelGraph:
    """The decomposed module: kernels, the steps of `call()`, and the buffers between them."""

    kernels: dict[str, TritonKernel]
    steps: list[Step]
    buffers: dict[str, Buffer]
    graph_inputs: list[str]
    graph_outputs: list[str]
    fusible_groups: list[list[str]]  # kernel names of each group, in launch order
    fusible_group_steps: list[list[int]] = field(default_factory=list)  # the same groups as step indexes

    def triton_steps(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "triton"]

    def library_steps(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "library"]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)


def library_calls(graph: KernelGraph) -> list[Step]:
    """The vendor/fallback calls of the graph: preserved as they are, never search targets."""
    return graph.library_steps()


def decompose(source: str) -> KernelGraph:
    """Parse an Inductor output module into a `KernelGraph`.

    Raises ValueError when the source is not Python or defines no `call`.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise ValueError(f"not a Python module (line {e.lineno}): {e.msg}") from e
    call_fn = find_call(tree)
    if call_fn is None:
        raise ValueError("no call(): expected `class Runner` with `def call(self, args)` or a module-level "
                         "`def call(args)`; is this an Inductor output module?")
    kernels = find_kernels(tree, source.splitlines())
    builder = _CallWalker(kernels, find_cpp_kernels(tree))
    for stmt in flatten_block(call_fn.body):
        builder.statement(stmt)
    for name, dtype in example_input_dtypes(tree).items():  # graph inputs: allocations say the others'
        buf = builder.buffers.get(name)
        if buf is not None and buf.is_graph_input and buf.dtype is None:
            buf.dtype = dtype
    _library_output_dtypes(builder.steps, builder.buffers)
    graph = KernelGraph(kernels=kernels, steps=builder.steps, buffers=builder.buffers,
                        graph_inputs=builder.inputs, graph_outputs=builder.outputs, fusible_groups=[])
    _link(graph)
    groups = fusible_groups(graph)
    graph.fusible_group_steps = groups
    graph.fusible_groups = [[graph.steps[i].target for i in g] for g in groups]
    return graph


class _CallWalker:
    """Turns the statements of `call()` into steps, tracking buffers and aliases."""

    def __init__(self, kernels: dict[str, TritonKernel], cpp_kernels: dict[str, list[str]] | None = None) -> None:
        self.kernels = kernels
        self.cpp_kernels = cpp_kernels or {}
        self.steps: list[Step] = []
        self.buffers: dict[str, Buffer] = {}
        self.alias: dict[str, str] = {}  # alias name -> base buffer name
        self.inputs: list[str] = []
        self.outputs: list[str] = []

    # -- names ---------------------------------------------------------------
    def base(self, name: str) -> str:
        seen = set()
        while name in self.alias and name not in seen:
            seen.add(name)
            name = self.alias[name]
        return name

    def is_tensor(self, name: str) -> bool:
        return name in self.alias or name in self.buffers or bool(_TENSOR_NAME_RE.match(name))

    def refs(self, node: ast.AST | None) -> list[str]:
        """Base buffer names referenced in an expression, in order, without repeats."""
        out: list[str] = []
        for n in ast.walk(node) if node is not None else []:
            if isinstance(n, ast.Name) and self.is_tensor(n.id):
                b = self.buffer(self.base(n.id)).name
                if b not in out:
                    out.append(b)
        return out

    def buffer(self, name: str) -> Buffer:
        """The buffer `name`; one never bound in call() is a module constant."""
        if name not in self.buffers:
            self.buffers[name] = Buffer(name=name, is_module_constant=True)
        return self.buffers[name]

    def define(self, name: str, **info) -> Buffer:
        self.alias.pop(name, None)
        buf = self.buffers.setdefault(name, Buffer(name=name))
        for k, v in info.items():
            setattr(buf, k, v)
        return buf

    def add_alias(self, name: str, base_expr: ast.AST) -> bool:
        bases = self.refs(base_expr)
        if not bases:
            return False
        self.alias[name] = bases[0]
        if name not in self.buffers[bases[0]].aliases:
            self.buffers[bases[0]].aliases.append(name)
        return True

    # -- statements ----------------------------------------------------------
    def statement(self, stmt: ast.stmt) -> None:
        try:
            handled = self._statement(stmt)
        except Exception:  # noqa: BLE001 - an odd statement must not sink the whole parse
            handled = False
        if not handled:
            self._other(stmt)

    def _statement(self, stmt: ast.stmt) -> bool:
        if isinstance(stmt, (ast.Delete, ast.Pass, ast.Import, ast.ImportFrom)):
            return True
        if isinstance(stmt, ast.Return):
            self._return(stmt)
            return True
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            return self._call(stmt.value, [], stmt)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
            names = [e.id for e in getattr(target, "elts", [target]) if isinstance(e, ast.Name)]
            if isinstance(value, ast.Name) and value.id == "args":
                self._unpack_args(names)
                return True
            if isinstance(target, ast.Name):
                if self._assign_alias(target.id, value):
                    return True
                if isinstance(value, ast.Call):
                    return self._call(value, names, stmt)
        return False

    def _unpack_args(self, names: list[str]) -> None:
        for n in names:
            self.define(n, is_graph_input=True)
            self.inputs.append(n)

    def _assign_alias(self, name: str, value: ast.expr) -> bool:
        if isinstance(value, ast.Name):
            return self.is_tensor(value.id) and self.add_alias(name, value)
        if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name):
            return self.is_tensor(value.value.id) and self.add_alias(name, value.value)
        if isinstance(value, ast.Call) and value.args:
            func = dotted(value.func) or ""
            if func in VIEW_FUNCS:
                return self.add_alias(name, value.args[0])
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            owner = value.func.value
            if value.func.attr in VIEW_METHODS and isinstance(owner, ast.Name) and self.is_tensor(owner.id):
                return self.add_alias(name, owner)
        return False

    def _call(self, call: ast.Call, names: list[str], stmt: ast.stmt) -> bool:
        func = dotted(call.func) or ""
        if func in BOOKKEEPING_CALLS or (names and all(n.startswith("stream") for n in names)):
            if func == "assert_size_stride" and len(call.args) >= 3 and isinstance(call.args[0], ast.Name):
                buf = self.buffers.get(self.base(call.args[0].id))
                # a graph input's layout, or a library call's output (its only statement of shape and stride)
                if buf is not None and (buf.is_graph_input or (buf.shape is None and call.args[0].id == buf.name)):
                    buf.shape, buf.stride = int_tuple(call.args[1]), int_tuple(call.args[2])
            return True
        if func in ALLOC_FUNCS and len(names) == 1:
            self._alloc(call, names[0], func, stmt)
            return True
        if func.endswith(".run") and isinstance(call.func, ast.Attribute):
            kname = dotted(call.func.value) or ""
            if kname in self.kernels or kname.startswith("triton_"):
                self._launch(call, kname, stmt)
                return True
        if func.startswith(LIBRARY_PREFIXES):
            self._library(call, func, names, stmt)
            return True
        if func in self.cpp_kernels and not names:
            self._cpp(call, func, stmt)
            return True
        return False

    def _cpp(self, call: ast.Call, func: str, stmt: ast.stmt) -> None:
        types = self.cpp_kernels[func]
        reads: list[str] = []
        writes: list[str] = []
        for i, arg in enumerate(call.args):
            bufs = self.refs(arg)
            typ = types[i] if i < len(types) else ""
            if "*" in typ and not typ.startswith("const"):
                writes += bufs
            reads += bufs  # a written pointer may be read too (in place): count it as read
        self._new_step("cpp", func, stmt, call, reads=_dedup(reads), writes=_dedup(writes))

    def _new_step(self, kind: str, target: str, stmt: ast.stmt, call: ast.Call | None = None, **kw) -> Step:
        step = Step(index=len(self.steps), kind=kind, target=target, line=stmt.lineno,
                    args=[ast.unparse(a) for a in call.args] if call else [],
                    kwargs={k.arg or "**": ast.unparse(k.value) for k in call.keywords} if call else {}, **kw)
        self.steps.append(step)
        return step

    def _alloc(self, call: ast.Call, name: str, func: str, stmt: ast.stmt) -> None:
        shape = int_tuple(call.args[0]) if call.args else None
        stride = int_tuple(call.args[1]) if len(call.args) > 1 else None
        dtype_node = call.args[2] if len(call.args) > 2 else next(
            (k.value for k in call.keywords if k.arg == "dtype"), None)
        dtype = ast.unparse(dtype_node).removeprefix("torch.") if dtype_node is not None else None
        self.define(name, shape=shape, stride=stride, dtype=dtype, is_module_constant=False)
        self._new_step("alloc", func, stmt, call, defines=[name])

    def _launch(self, call: ast.Call, kname: str, stmt: ast.stmt) -> None:
        kernel = self.kernels.get(kname)
        reads: list[str] = []
        writes: list[str] = []
        numels: list[int] = []
        grid: list[int] = []
        params = kernel.launch_params if kernel and kernel.arg_names else []
        for i, arg in enumerate(call.args):
            bufs = self.refs(arg)
            if kernel is not None and i < len(params):  # params is empty unless the kernel is known
                p = params[i]
                if bufs and (kernel.is_pointer(p) or not kernel.signature):
                    writes += bufs if kernel.writes_param(p) else []
                    reads += bufs if kernel.reads_param(p) or not kernel.writes_param(p) else []
                elif p.endswith("numel") and (numel := int_literal(arg)) is not None:
                    numels.append(numel)
            elif params:
                if (value := int_literal(arg)) is not None:
                    grid.append(value)
            else:  # unknown kernel: any tensor may be read or written
                reads += bufs
                writes += bufs
        if not params:
            trailing = [int_literal(a) for a in call.args]
            while trailing and (last := trailing[-1]) is not None:
                trailing.pop()
                numels.insert(0, last)
        self._new_step("triton", kname, stmt, call, reads=_dedup(reads), writes=_dedup(writes),
                       numels=numels, grid=grid, replaceable=True)

    def _library(self, call: ast.Call, func: str, names: list[str], stmt: ast.stmt) -> None:
        writes: list[str] = []
        out = next((k.value for k in call.keywords if k.arg == "out"), None)
        if out is not None:
            writes += self.refs(out)
        if op_name(func).endswith("_") and call.args:  # in-place op (aten.copy_): mutates arg 0
            writes += self.refs(call.args[0])
        inputs = list(call.args) + [k.value for k in call.keywords if k.arg != "out"]
        reads = _dedup([b for a in inputs for b in self.refs(a)])
        for n in names:
            self.define(n, is_module_constant=False)
        writes += names
        self._new_step("library", func, stmt, call, reads=reads, writes=_dedup(writes), defines=names)

    def _other(self, stmt: ast.stmt) -> None:
        """An unrecognised statement: kept as a step, reading every buffer it names."""
        targets = list(getattr(stmt, "targets", []))
        names = [e.id for t in targets for e in getattr(t, "elts", [t]) if isinstance(e, ast.Name)]
        value = getattr(stmt, "value", None)
        reads = self.refs(value) if value is not None else self.refs(stmt)
        writes = list(names)
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr.endswith("_"):
            writes += self.refs(value.func.value)  # buf.zero_(), buf.copy_(x): in-place on the owner
        for n in names:
            self.define(n, is_module_constant=False)
        func = dotted(value.func) if isinstance(value, ast.Call) else None
        self._new_step("other", func or type(stmt).__name__, stmt, None, reads=reads, writes=_dedup(writes),
                       defines=names)
        self.steps[-1].args = [ast.unparse(stmt)]

    def _return(self, stmt: ast.Return) -> None:
        value = stmt.value
        elts = value.elts if isinstance(value, (ast.Tuple, ast.List)) else [value] if value is not None else []
        for e in elts:
            for b in self.refs(e)[:1]:
                if b not in self.outputs:
                    self.outputs.append(b)
                self.buffers[b].is_graph_output = True


def _library_output_dtypes(steps: list[Step], buffers: dict[str, Buffer]) -> None:
    """The dtype of what a library call returns (Inductor states none for it), where the operator keeps its
    inputs' dtype and they agree: what the agents are told of it, and what a group allocates for it."""
    for st in steps:
        if st.kind != "library" or op_name(st.target) not in SAME_DTYPE_OPS:
            continue
        dtypes = {buffers[b].dtype for b in st.reads if b in buffers}
        if len(dtypes) == 1 and None not in dtypes:
            for n in st.defines:
                buf = buffers.get(n)
                if buf is not None and buf.dtype is None:
                    buf.dtype = next(iter(dtypes))


def find_cpp_kernels(tree: ast.Module) -> dict[str, list[str]]:
    """Module-level `x = async_compile.cpp_pybinding(['const float*', 'float*'], src)`: name -> arg types."""
    out: dict[str, list[str]] = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call) and (dotted(node.value.func) or "").endswith("cpp_pybinding")
                and node.value.args and isinstance(node.value.args[0], (ast.List, ast.Tuple))):
            # the C argument types are string literals ('const float*')
            out[node.targets[0].id] = [cast(str, e.value) if isinstance(e, ast.Constant) else ""
                                       for e in node.value.args[0].elts]
    return out


def _dedup(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _link(graph: KernelGraph) -> None:
    """Fill each buffer's producers and consumers from the steps' writes and reads."""
    for step in graph.steps:
        for b in step.reads:
            graph.buffers[b].consumers.append(step.index)
        for b in step.writes:
            graph.buffers[b].producers.append(step.index)


def fusible_groups(graph: KernelGraph) -> list[list[int]]:
    """Maximal runs of Triton launches joined only through intermediate buffers (step indexes).

    Launches are adjacent when no library or unrecognised step lies between them
    (allocations and bookkeeping do not count). Consecutive launches a -> b are
    linked by an intermediate buffer that a writes and b reads, and whose every
    producer and consumer lies in the run: then a fused kernel can keep it out
    of global memory. A link whose buffer escapes the run is cut and the runs
    recomputed, until stable (cutting only shrinks runs, so this terminates).
    """
    sequences: list[list[int]] = [[]]
    for step in graph.steps:
        if step.kind == "triton":
            sequences[-1].append(step.index)
        elif step.kind != "alloc":
            sequences.append([])

    def link_buffers(a: int, b: int) -> list[Buffer]:
        reads_b = set(graph.steps[b].reads)
        return [graph.buffers[n] for n in graph.steps[a].writes
                if n in reads_b and graph.buffers[n].is_intermediate]

    cut: set[tuple[int, int]] = set()
    while True:
        runs: list[list[int]] = []
        for seq in sequences:
            for i, idx in enumerate(seq):
                if i and (seq[i - 1], idx) not in cut and link_buffers(seq[i - 1], idx):
                    runs[-1].append(idx)
                else:
                    runs.append([idx])
        changed = False
        for run in runs:
            members = set(run)
            for a, b in zip(run, run[1:], strict=False):  # adjacent pairs
                if not any(members.issuperset(buf.consumers + buf.producers) for buf in link_buffers(a, b)):
                    cut.add((a, b))
                    changed = True
        if not changed:
            return [r for r in runs if len(r) >= 2]
