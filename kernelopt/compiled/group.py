"""Library groups: a GEMM/convolution and the kernels consuming its output
(docs/architecture.md, 3. Decompose).

A *library group* is a vendor-library call (`extern_kernels.mm/addmm/bmm/
baddbmm/convolution`), or a Triton GEMM/convolution template that Inductor's
autotuner chose instead of it, together with the kernels right after it that
read what it (or the group so far) wrote: the epilogue. A generator may replace
the group as one. Its interface is that of a kernel: `run(*params, stream=None)`
over the group's external buffers, named as `call()` binds them at that point;
outputs are allocated by the caller (Gate 2's poisoning and guard bands apply as
they do to a kernel); intermediates that nothing reads after the group are
dropped from the re-stitched module (the candidate allocates what it needs).

Everything is derived from the module's source, deterministically:

- `library_groups(source)`: the groups, with their parameters, roles
  (`in_ptrN` / `out_ptrN` / `in_out_ptrN`, Gate 2's convention), the statements
  of `call()` they span, and why one cannot be re-stitched (`reason`).
- `reference_source(group)`: a group "candidate" that runs Inductor's own
  statements (library call included) inside `run`: the reference Gate 2 compares
  against, and the way Gate 2 captures the group's real inputs (it is installed
  in the module and recorded like a kernel).
- `rewrite_module(source, names)`: the module with those groups' statements
  replaced by `<name>.run(*params)`; `<name>` is a module global that the runtime
  binds to the candidate (`compiled.runtime.load_output_module`). With no names
  the source is returned unchanged (re-stitch with nothing replaced is bit-exact).

Which statements of `call()` a group spans, and what its `run` executes over which
parameters, is `compiled.group_span`'s (the statement level).

A candidate module may define `bind(output_module)`, returning the object whose
`run` is launched: that is how a group candidate reaches Inductor's own epilogue
kernels (pinned to their compiled configs) to run them unchanged.
"""
from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import asdict, dataclass, field

from kernelopt.compiled.decompose import KernelGraph, decompose
from kernelopt.compiled.group_span import Unsupported, call_span
from kernelopt.compiled.module_parse import comment_block_above, dotted, find_call, op_name

GEMM_OPS = ("baddbmm", "addmm", "bmm", "mm")  # most specific first (template kernels list several aten ops)
CONV_OPS = ("convolution",)
ANCHOR_OPS = GEMM_OPS + CONV_OPS
# The constants by which Inductor's bmm template states its operands' batch strides (its mm and addmm
# templates have none): what says a template computes a batched GEMM, whatever ops it is named after.
BATCH_STRIDES = ("stride_aq", "stride_bq")
# Library entry points that are one of ANCHOR_OPS under another name. Inductor calls
# `extern_kernels.bias_addmm(bias expanded to (M, N) with stride 0, mat1, mat2, ...)` for an
# addmm whose bias is a broadcast row (cuBLASLt's bias epilogue): the same arithmetic as addmm.
LIBRARY_ALIASES = {"bias_addmm": "addmm"}
EPILOGUE_KINDS = ("triton", "cpp")
GROUP_PREFIX = "_kernelopt_group_"
CHAIN_OP = "fusion"  # a kernel chain's op: adjacent Triton kernels joined by intermediates
CHAIN_PREFIX = f"{GROUP_PREFIX}chain_"
# Inductor's heuristic-launched kernels: a chain is made of these (a template is a library group's anchor)
CHAIN_KINDS = ("pointwise", "reduction", "persistent")


@dataclass
class LibraryGroup:
    name: str  # the module global the re-stitched call() launches: _kernelopt_group_[chain_]<anchor step>
    anchor: int  # step index of the library call / template launch
    op: str  # mm | addmm | bmm | baddbmm | convolution | fusion (a kernel chain)
    anchor_kind: str  # library | template | triton (a kernel chain: op "fusion", its first kernel)
    anchor_target: str  # extern_kernels.addmm, or the template kernel's name
    steps: list[int]  # anchor and epilogue, in launch order
    kernels: list[str]  # the steps' targets
    inputs: list[str]  # external buffers the group reads (base names)
    outputs: list[str]  # buffers it writes that are used after it (or graph outputs / mutated inputs)
    dropped: list[str]  # intermediates it writes that nothing reads after it
    params: list[str] = field(default_factory=list)  # run()'s parameters: names bound in call()
    arg_names: list[str] = field(default_factory=list)  # in_ptrN | out_ptrN | in_out_ptrN per param
    body: list[str] = field(default_factory=list)  # the statements run() executes (Inductor's own)
    anchor_in_body: int = -1  # index of the anchor statement in `body`
    param_shapes: dict = field(default_factory=dict)  # param -> [shape, stride] where call() states them
    # param -> torch dtype name ("float32", "bfloat16") where the module states it (allocation, get_args()):
    # a generator whose arithmetic is for one dtype declines the others (search.registry's `dtypes`)
    param_dtypes: dict = field(default_factory=dict)
    reason: str = ""  # why the group cannot be re-stitched; "" when it can
    # What the module states about the group, for a generator that writes it anew (agents.codegen):
    # Inductor's comments on the group's statements in call() ("Source Nodes: [...], Original ATen: [...]"),
    # and each of its kernels' definitions (the comment block naming the ATen graph it fuses, then its source)
    notes: list[str] = field(default_factory=list)
    kernel_sources: dict = field(default_factory=dict)

    @property
    def replaceable(self) -> bool:
        return not self.reason

    @property
    def epilogue(self) -> list[str]:
        return self.kernels[1:]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "LibraryGroup":
        return cls(**d)


def is_group_name(name: str) -> bool:
    return name.startswith(GROUP_PREFIX)


# ---------------------------------------------------------------------------
# detection (graph level)
# ---------------------------------------------------------------------------

def anchor_op(graph: KernelGraph, i: int) -> tuple[str, str] | None:
    """(the library op, "library" | "template") of step `i` when it computes a GEMM or a convolution: a
    library call, or a Triton template Inductor generated for one; None otherwise."""
    step = graph.steps[i]
    if step.kind == "library" and step.target.startswith(("extern_kernels.", "torch.ops.aten.", "aten.")):
        op = op_name(step.target)
        op = LIBRARY_ALIASES.get(op, op)
        return (op, "library") if op in ANCHOR_OPS else None
    if step.kind == "triton":
        k = graph.kernels.get(step.target)
        if k is not None and k.kind == "template":
            ops = {a.rpartition(".")[2] for a in k.aten_ops}
            # the aten ops a template is named after include those of nodes fused into it (an attention's
            # q·kᵀ bmm template lists the qkv projection's addmm): a template that states batch strides
            # computes a batched GEMM (search.generators.gemm_template reads which one from its text)
            batched = any(c in k.source for c in BATCH_STRIDES)
            listed = [op for op in ANCHOR_OPS if op in ops]
            fits = [op for op in listed if op not in GEMM_OPS or (op in ("baddbmm", "bmm")) == batched]
            if listed:
                return (fits or listed)[0], "template"
    return None


_ALLOW_TF32 = re.compile(r"ALLOW_TF32\s*:\s*tl\.constexpr\s*=\s*(True|False)")


def template_kernels(graph: KernelGraph) -> dict[str, tuple[str, bool]]:
    """{kernel: (the library op it computes, whether its dot runs TF32)} for each of the module's Triton templates
    that computes a GEMM or a convolution (Inductor states `ALLOW_TF32` as a constexpr in each)."""
    found: dict[str, tuple[str, bool]] = {}
    for step in graph.steps:
        anchor = anchor_op(graph, step.index)
        kernel = graph.kernels.get(step.target)
        if anchor is None or anchor[1] != "template" or kernel is None:
            continue
        flag = _ALLOW_TF32.search(kernel.source)
        found[step.target] = (anchor[0], bool(flag and flag.group(1) == "True"))
    return found


def ieee_convolution_templates(graph: KernelGraph) -> list[str]:
    """The module's convolution templates that compute in IEEE fp32 (their dot without TF32): where the
    baseline has one, a TF32 convolution template is lower precision than the baseline computed."""
    return [name for name, (op, tf32) in template_kernels(graph).items() if op in CONV_OPS and not tf32]


def _detect(graph: KernelGraph) -> list[LibraryGroup]:
    groups = []
    for step in graph.steps:
        found = anchor_op(graph, step.index)
        if found is None:
            continue
        op, kind = found
        members = [step.index]
        written = set(step.writes)
        for nxt in graph.steps[step.index + 1:]:
            if nxt.kind == "alloc":
                continue
            if nxt.kind in EPILOGUE_KINDS and anchor_op(graph, nxt.index) is None and written & set(nxt.reads):
                members.append(nxt.index)
                written |= set(nxt.writes)
                continue
            break
        inputs, outputs, dropped = _boundary(graph, members)
        groups.append(LibraryGroup(
            name=f"{GROUP_PREFIX}{step.index}", anchor=step.index, op=op, anchor_kind=kind,
            anchor_target=step.target, steps=members, kernels=[graph.steps[i].target for i in members],
            inputs=inputs, outputs=outputs, dropped=dropped))
    return groups


def _boundary(graph: KernelGraph, members: list[int]) -> tuple[list[str], list[str], list[str]]:
    """The buffers a span of steps reads from before it, writes for after it, and writes for itself only."""
    first, last = members[0], members[-1]
    reads = list(dict.fromkeys(b for i in members for b in graph.steps[i].reads))
    writes = list(dict.fromkeys(b for i in members for b in graph.steps[i].writes))
    inputs = []
    for b in reads:
        buf = graph.buffers[b]
        # external: state from before the group (a graph input, a constant, an earlier
        # producer's data); a buffer the group itself writes first is internal to it
        if buf.is_graph_input or buf.is_module_constant or not buf.producers or min(buf.producers) < first:
            inputs.append(b)
    outputs = []
    for b in writes:
        buf = graph.buffers[b]
        used_after = any(i > last for i in buf.consumers + buf.producers)
        if used_after or buf.is_graph_output or buf.is_graph_input or buf.is_module_constant:
            outputs.append(b)
    return inputs, outputs, [b for b in writes if b not in outputs]


def _detect_chains(graph: KernelGraph) -> list[LibraryGroup]:
    """Kernel chains: decompose's fusible groups (adjacent Triton launches joined by intermediates), cut at
    template kernels (those anchor library groups), two kernels at least."""
    chains = []
    for run in graph.fusible_group_steps:
        part: list[int] = []
        for i in run + [-1]:
            k = graph.kernels.get(graph.steps[i].target) if i >= 0 else None
            if k is not None and k.kind in CHAIN_KINDS:
                part.append(i)
                continue
            if len(part) >= 2:
                inputs, outputs, dropped = _boundary(graph, part)
                chains.append(LibraryGroup(
                    name=f"{CHAIN_PREFIX}{part[0]}", anchor=part[0], op=CHAIN_OP, anchor_kind="triton",
                    anchor_target=graph.steps[part[0]].target, steps=list(part),
                    kernels=[graph.steps[j].target for j in part], inputs=inputs, outputs=outputs,
                    dropped=dropped))
            part = []
    return chains


# ---------------------------------------------------------------------------
# statement level: each group's span of call() (compiled.group_span), parameters and roles
# ---------------------------------------------------------------------------

def _roles(group: LibraryGroup, graph: KernelGraph, params: list[str], base: dict[str, str]) -> list[str]:
    written = {b for i in group.steps for b in graph.steps[i].writes}
    bases = [base[p] for p in params]
    if len(set(bases)) != len(bases):
        raise Unsupported("two parameters name one buffer (their copies would not share memory)")
    out, n_in, n_out, n_io = [], 0, 0, 0
    for p in params:
        b = base[p]
        if b in written and b in group.inputs:
            out.append(f"in_out_ptr{n_io}")
            n_io += 1
        elif b in written:
            out.append(f"out_ptr{n_out}")
            n_out += 1
        else:
            out.append(f"in_ptr{n_in}")
            n_in += 1
    return out


def target_overlaps(groups: list[LibraryGroup]) -> dict[str, set[str]]:
    """Group name → the targets it overlaps: the Triton kernels of its steps, and every other group
    sharing a step. A combination of replacements (verify.waterfall) holds at most one of them:
    the re-stitch splices a group's statements whole, so a kernel inside it would go unused, and two
    overlapping groups would splice overlapping spans."""
    out: dict[str, set[str]] = {}
    for g in groups:
        others = {h.name for h in groups if h.name != g.name and set(h.steps) & set(g.steps)}
        out[g.name] = set(g.kernels[1:] if g.anchor_kind == "library" else g.kernels) | others
    return out


def library_groups(source: str, graph: KernelGraph | None = None) -> list[LibraryGroup]:
    """The library groups of an Inductor output module, in launch order (see the module doc)."""
    graph = graph or decompose(source)
    return _complete(_detect(graph), source, graph)


def kernel_chains(source: str, graph: KernelGraph | None = None) -> list[LibraryGroup]:
    """The module's kernel chains (op "fusion"): adjacent Triton kernels a fused kernel could replace,
    keeping their intermediates on chip. Launched, gated and re-stitched exactly as a library group."""
    graph = graph or decompose(source)
    return _complete(_detect_chains(graph), source, graph)


def all_groups(source: str, graph: KernelGraph | None = None) -> list[LibraryGroup]:
    """Library groups, then kernel chains: every group target of the module (they may share steps:
    `target_overlaps` keeps overlapping ones out of one combination)."""
    graph = graph or decompose(source)
    return _complete(_detect(graph) + _detect_chains(graph), source, graph)  # one parse of the module


def _complete(groups: list[LibraryGroup], source: str, graph: KernelGraph) -> list[LibraryGroup]:
    """Each group's span of call(): parameters and roles, body, notes, shapes, dtypes (or why it has none)."""
    tree = ast.parse(source)
    lines = source.splitlines()
    definitions = _kernel_definitions(tree, lines)
    for g in groups:
        g.kernel_sources = {k: definitions[k] for k in g.kernels if k in definitions}
        try:
            sp, params, base = call_span(tree, graph, g.steps)
            g.arg_names = _roles(g, graph, params, base)
        except Unsupported as exc:
            g.reason = str(exc)
            continue
        span = sp.block[sp.start:sp.stop]
        g.notes = [t.strip() for t in lines[span[0].lineno - 1:span[-1].end_lineno or span[-1].lineno]
                   if t.strip().startswith("#")]
        g.params = params
        g.body = [ast.unparse(s) for s in sp.body]
        g.anchor_in_body = sp.anchor_in_body
        for p in params:
            buf = graph.buffers.get(base[p])
            if p == base[p] and buf is not None and buf.shape is not None:
                g.param_shapes[p] = [buf.shape, buf.stride]
            if buf is not None and buf.dtype:
                g.param_dtypes[p] = buf.dtype
    return groups


def _kernel_definitions(tree: ast.Module, lines: list[str]) -> dict[str, str]:
    """name -> the module's `name = async_compile.<kind>(..., source)`: its comment block, then its source."""
    out = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call) and (dotted(node.value.func) or "").startswith("async_compile.")):
            continue
        texts = [a.value for a in node.value.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if texts:
            # the kernel path line names a cache file of the machine that compiled it: nothing to read
            comment = "\n".join(t for t in comment_block_above(lines, node.lineno)
                                if not t.lstrip().startswith("# kernel path:"))
            out[node.targets[0].id] = (comment + "\n" if comment else "") + max(texts, key=len).strip("\n")
    return out


# ---------------------------------------------------------------------------
# re-stitch
# ---------------------------------------------------------------------------

def rewrite_module(source: str, names: list[str] | set[str]) -> str:
    """`source` with the named groups' statements replaced by `<name>.run(*params)`.

    Allocations of buffers used after a group stay (the candidate writes into
    them); dead intermediates and every `del` of them go. Each name becomes a
    module global (`None` until the runtime binds the candidate to it).
    """
    names = set(names)
    if not names:
        return source
    tree = ast.parse(source)
    graph = decompose(source)
    groups = {g.name: g for g in all_groups(source, graph)}
    unknown = names - set(groups)
    if unknown:
        raise KeyError(f"no library group or kernel chain {sorted(unknown)} in the module (groups: {sorted(groups)})")
    spans = []
    for n in sorted(names, key=lambda n: groups[n].anchor):
        g = groups[n]
        if g.reason:
            raise ValueError(f"group {n} cannot be re-stitched: {g.reason}")
        sp, params, _ = call_span(tree, graph, g.steps)
        spans.append((g, sp, params))
    dead: set[str] = set()
    for g, sp, params in reversed(spans):  # later spans first: earlier indexes stay valid
        launch = ast.parse(f"{g.name}.run({', '.join(params)})").body[0]
        sp.block[sp.start:sp.stop] = sp.prologue + sp.hoisted + [launch] + sp.after
        dead |= sp.dead
    call_fn = find_call(tree)
    assert call_fn is not None  # the spans above lie in it
    _drop_dels(call_fn.body, dead)
    lines = source.splitlines(keepends=True)
    start = (call_fn.decorator_list[0].lineno if call_fn.decorator_list else call_fn.lineno) - 1
    text = textwrap.indent(ast.unparse(call_fn), " " * call_fn.col_offset) + "\n"
    out = "".join(lines[:start]) + text + "".join(lines[call_fn.end_lineno:])
    out += "".join(f"\n{n} = None  # KernelOPT library group, bound to its candidate at load\n" for n in sorted(names))
    return out


def _drop_dels(body: list[ast.stmt], dead: set[str]) -> None:
    for s in list(body):
        if isinstance(s, ast.Delete):
            s.targets = [t for t in s.targets if not (isinstance(t, ast.Name) and t.id in dead)]
            if not s.targets:
                body.remove(s)
        for part in ("body", "orelse", "finalbody"):
            inner = getattr(s, part, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                _drop_dels(inner, dead)
                if not inner:
                    inner.append(ast.Pass())


def run_function_source(group: LibraryGroup, body: list[str] | None = None) -> str:
    """`def run(<params>, stream=None): <body>` (the group's own statements by default)."""
    lines = list(body if body is not None else group.body)
    text = "\n".join(lines)
    streams = sorted({m for m in re.findall(r"\bstream\d+\b", text)})
    pre = [f"{s} = stream if stream is not None else get_raw_stream({s[6:]})" for s in streams]
    params = ", ".join(group.params + ["stream=None"])
    return f"def run({params}):\n" + textwrap.indent("\n".join(pre + lines) or "pass", "    ") + "\n"


_BIND_TEMPLATE = '''
def bind(output_module):
    """The runner for one loaded output module: `run` executes in its namespace."""
    namespace = dict(output_module.__dict__)
    namespace.update(_EXTRA_GLOBALS)
    local = {}
    exec(compile(_RUN_SOURCE, "<kernelopt group %(name)s>", "exec"), namespace, local)
    runner = _Runner(local["run"])
    # a candidate that chooses its construction at run time says which one ran (Gate 2 records it)
    runner.kernelopt_resolved_method = globals().get("kernelopt_resolved_method")
    return runner


class _Runner:
    def __init__(self, fn):
        self.run = fn


def run(*args, stream=None):
    raise RuntimeError("a group candidate runs bound to its output module: bind(module).run(...)")
'''


def group_module_source(group: LibraryGroup, body: list[str] | None = None, header: str = "",
                        preamble: str = "", extra_globals: str = "{}") -> str:
    """A group candidate module: `bind(module)` -> runner of `body` (default: Inductor's own).

    `preamble`: code defining what `extra_globals` (a dict expression) adds to the
    namespace `body` runs in, on top of the output module's globals.
    """
    doc = header or f"KernelOPT group reference: Inductor's own statements of {group.name} ({group.op})."
    return (f'"""{doc}"""\n{preamble}\n_RUN_SOURCE = {run_function_source(group, body)!r}\n'
            f"_EXTRA_GLOBALS = {extra_globals}\n" + _BIND_TEMPLATE % {"name": group.name})


def reference_source(group: LibraryGroup) -> str:
    return group_module_source(group)

