"""The span of `call()` a library group or kernel chain occupies: the statement level of
compiled.group (docs/architecture.md, 3. Decompose).

`call_span(tree, graph, steps)` finds the statements of Inductor's `call()` that a group's
steps are, with what travels with them (the allocations and stream assignments before
them, the `del`s after), classifies each, and says what a re-stitch keeps around the
launch (prologue, hoisted allocations, aliases and `del`s after) and what `run()`
executes (body) over which parameters. A span it cannot cut raises `Unsupported`
(the group's `reason`).
"""
from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass

from kernelopt.compiled.decompose import ALLOC_FUNCS, BOOKKEEPING_CALLS, VIEW_FUNCS, VIEW_METHODS, KernelGraph
from kernelopt.compiled.module_parse import dotted, find_call

_STREAM_RE = re.compile(r"^stream(\d+)$")


class Unsupported(Exception):
    """Why a group's span cannot be cut out of call() (the group's `reason`)."""


def _positions(body: list[ast.stmt], out: list) -> None:
    """(statement, the list holding it) for every simple statement, in program order."""
    for s in body:
        if isinstance(s, (ast.With, ast.AsyncWith)):
            _positions(s.body, out)
        elif isinstance(s, (ast.If, ast.For, ast.While, ast.Try)):
            for part in ("body", "orelse", "finalbody"):
                _positions(getattr(s, part, []) or [], out)
        else:
            out.append((s, body))


def _call_func(stmt: ast.stmt) -> str:
    value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
    return (dotted(value.func) or "") if isinstance(value, ast.Call) else ""


def _single_target(stmt: ast.stmt) -> str | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    return None


def _is_alloc(stmt: ast.stmt) -> bool:
    return _single_target(stmt) is not None and _call_func(stmt) in ALLOC_FUNCS


def _is_stream(stmt: ast.stmt) -> bool:
    t = _single_target(stmt)
    return t is not None and bool(_STREAM_RE.match(t))


def _is_bookkeeping(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and _call_func(stmt) in BOOKKEEPING_CALLS


def _alias_source(stmt: ast.stmt, tensors: set[str]) -> str | None:
    """For `a = b`, `a = reinterpret_tensor(b, ...)`, `a = b.view(...)`, `a = b[0]`: b."""
    if not isinstance(stmt, ast.Assign) or _single_target(stmt) is None:
        return None
    v = stmt.value
    if isinstance(v, ast.Name) and v.id in tensors:
        return v.id
    if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name) and v.value.id in tensors:
        return v.value.id
    if isinstance(v, ast.Call) and v.args and (dotted(v.func) or "") in VIEW_FUNCS \
            and isinstance(v.args[0], ast.Name) and v.args[0].id in tensors:
        return v.args[0].id
    if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr in VIEW_METHODS \
            and isinstance(v.func.value, ast.Name) and v.func.value.id in tensors:
        return v.func.value.id
    return None


def _loads(node: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]


def _del_names(stmt: ast.stmt) -> list[str]:
    return [t.id for t in stmt.targets if isinstance(t, ast.Name)] if isinstance(stmt, ast.Delete) else []


@dataclass
class Span:
    block: list  # the statement list holding the group
    start: int  # first index in block (inclusive)
    stop: int  # last index + 1
    prologue: list  # stream assignments and asserts, kept before the launch
    hoisted: list  # allocations of buffers used after the group: kept before the launch
    body: list  # what run() executes
    anchor_in_body: int
    after: list  # aliases and dels of live names, replayed after the launch
    dead: set  # names bound in the span that nothing reads after it


def _module_globals(tree: ast.Module) -> set[str]:
    names = set(dir(builtins))
    for node in tree.body:
        for n in ast.walk(node) if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) else []:
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _stmt(text: str, where: ast.stmt) -> ast.stmt:
    return ast.copy_location(ast.parse(text).body[0], where)


def _caller_alloc(name: str, span_stmts: list, step_ids: set[int], buf, globals_: set[str]) -> ast.stmt:
    """`name = empty_strided_<device>(shape, stride, torch.<dtype>)`: the caller's allocation of a library call's
    result the group must leave behind, with the layout Inductor's `assert_size_stride` states for it."""
    defining = [s for s in span_stmts if id(s) in step_ids and _single_target(s) == name]
    why = f"{name} is returned by a library call inside the group and used after it"
    if not defining or buf is None or buf.shape is None or buf.stride is None or not buf.dtype:
        raise Unsupported(f"{why}, and its layout or dtype is not stated")
    alloc = next((f for f in sorted(ALLOC_FUNCS) if f.startswith("empty_strided_") and f in globals_
                  and not f.endswith(("_pinned", "_p2p"))), None)
    if alloc is None:
        raise Unsupported(f"{why}, and the module has no device allocator to allocate it with")
    return _stmt(f"{name} = {alloc}({tuple(buf.shape)!r}, {tuple(buf.stride)!r}, torch.{buf.dtype})", defining[0])


#: the group's name for the caller's buffer of a converted library result while the call rebinds the name
OUT_PREFIX = "_kernelopt_out_"


def call_span(tree: ast.Module, graph: KernelGraph, steps: list[int]) -> tuple[Span, list[str], dict[str, str]]:
    """A group's statements in call() (`steps`: its step indexes, in launch order), and its
    parameters (name -> base buffer)."""
    call_fn = find_call(tree)
    if call_fn is None:  # decompose finds no steps (so no group) in a module without call()
        raise Unsupported("the module has no call()")
    flat: list = []
    _positions(call_fn.body, flat)
    by_line: dict[int, list] = {}
    for pos, (s, _blk) in enumerate(flat):
        by_line.setdefault(s.lineno, []).append(pos)
    step_pos = []
    for i in steps:
        step = graph.steps[i]
        cands = [p for p in by_line.get(step.line, []) if step.target in ast.unparse(flat[p][0])]
        if not cands:
            raise Unsupported(f"statement of step {i} ({step.target}) not found")
        step_pos.append(cands[0])
    block = flat[step_pos[0]][1]
    if any(flat[p][1] is not block for p in step_pos):
        raise Unsupported("the group's statements lie in different blocks of call()")
    start = block.index(flat[step_pos[0]][0])
    while start > 0 and (_is_alloc(block[start - 1]) or _is_stream(block[start - 1])):
        start -= 1
    stop = block.index(flat[step_pos[-1]][0]) + 1
    while stop < len(block) and isinstance(block[stop], ast.Delete):
        stop += 1
    span_stmts = block[start:stop]
    span_ids = {id(s) for s in span_stmts}
    step_ids = {id(flat[p][0]) for p in step_pos}
    last_flat = max(p for p, (s, _) in enumerate(flat) if id(s) in span_ids)

    tensors = set(graph.buffers) | {a for b in graph.buffers.values() for a in b.aliases}
    base_of = {a: b.name for b in graph.buffers.values() for a in b.aliases}
    base_of.update({b: b for b in graph.buffers})
    live_after = {n for s, _ in flat[last_flat + 1:] if not isinstance(s, ast.Delete) for n in _loads(s)}

    # classify the span's statements
    kinds = []
    for s in span_stmts:
        if id(s) in step_ids:
            kinds.append("step")
        elif _is_alloc(s):
            kinds.append("alloc")
        elif _is_stream(s):
            kinds.append("stream")
        elif _is_bookkeeping(s):
            kinds.append("bookkeeping")
        elif isinstance(s, ast.Delete):
            kinds.append("del")
        elif _alias_source(s, tensors) is not None:
            kinds.append("alias")
        else:
            raise Unsupported(f"statement `{ast.unparse(s)}` inside the group")
    bound_in_span: dict[str, str] = {}  # name -> the kind of statement binding it last
    for s, k in zip(span_stmts, kinds, strict=True):
        if name := _single_target(s):
            bound_in_span[name] = k
    for s, k in zip(span_stmts, kinds, strict=True):
        if k == "step" and isinstance(s, ast.Assign):
            for t in s.targets:
                for node in ast.walk(t):
                    if isinstance(node, ast.Name):
                        bound_in_span[node.id] = "define"
    # names that must exist after the span: live names bound in it, and what their aliases need
    keep: set[str] = set()
    # a library call's result that must outlive the span (Inductor's in-place epilogue after a convolution:
    # `buf1 = extern_kernels.convolution(...)`, `buf2 = buf1`, the kernel writes buf2, call() returns it): the
    # caller allocates it with the layout Inductor asserts, and the group writes the call's result into it
    converted: dict[str, ast.stmt] = {}  # name -> the caller's allocation of it
    globals_ = _module_globals(tree)
    todo = [n for n in bound_in_span if n in live_after]
    while todo:
        n = todo.pop()
        if n in keep:
            continue
        keep.add(n)
        kind = bound_in_span.get(n)
        if kind == "alias":
            src = _alias_source(next(s for s in span_stmts if _single_target(s) == n), tensors)
            if src is not None and src in bound_in_span:
                todo.append(src)
        elif kind == "define":
            converted[n] = _caller_alloc(n, span_stmts, step_ids, graph.buffers.get(base_of.get(n, n)), globals_)
    dead = {n for n, k in bound_in_span.items() if n not in keep and k != "stream"}

    hoisted = [s for s, k in zip(span_stmts, kinds, strict=True) if k == "alloc" and _single_target(s) in keep]
    hoisted += list(converted.values())
    hoisted_names = [name for name in map(_single_target, hoisted) if name is not None]  # each alloc is named
    body_kinds = ("step", "alloc", "alias", "del", "stream")
    # names the span binds that the caller will not have: bookkeeping about them (Inductor's
    # `assert_size_stride(buf2, ...)` after a library call) runs inside the group, in order
    inner = {n for n, k in bound_in_span.items() if k != "stream"} - set(hoisted_names)

    def in_body(s: ast.stmt, k: str) -> bool:
        if k == "bookkeeping":  # a converted result's assert too: the caller's allocation precedes no prologue
            return bool(set(_loads(s)) & (inner | set(converted)))
        return k in body_kinds and not (k == "alloc" and s in hoisted)

    body = []
    for s, k in zip(span_stmts, kinds, strict=True):
        if not in_body(s, k):
            continue
        name = _single_target(s) if id(s) in step_ids else None
        if name in converted:  # the call stays as it is (generators rewrite it); its result goes to the caller's
            body += [_stmt(f"{OUT_PREFIX}{name} = {name}", s), s, _stmt(f"{OUT_PREFIX}{name}.copy_({name})", s),
                     _stmt(f"{name} = {OUT_PREFIX}{name}", s)]
        else:
            body.append(s)
    anchor_in_body = body.index(flat[step_pos[0]][0])
    params: list[str] = []
    bound: set[str] = set(hoisted_names)
    for s in body:
        for n in _loads(s):
            if n in bound or n in params:
                continue
            if n in tensors:
                params.append(n)
            elif not (_STREAM_RE.match(n) or n in globals_):
                raise Unsupported(f"the group reads {n}, neither a buffer nor a module global")
        for node in ast.walk(s):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                bound.add(node.id)
    params += [n for n in hoisted_names if n not in params]
    caller_bound = (set(params) | keep)
    after = []
    for s, k in zip(span_stmts, kinds, strict=True):
        if k == "alias" and _single_target(s) in keep:
            after.append(s)
        elif k == "del":
            names = [n for n in _del_names(s) if n in caller_bound and n not in dead]
            if names:
                after.append(ast.Delete(targets=[ast.Name(n, ast.Del()) for n in names]))
    prologue = [s for s, k in zip(span_stmts, kinds, strict=True) if k == "bookkeeping" and not in_body(s, k)]
    streams = {_single_target(s): s for s, k in zip(span_stmts, kinds, strict=True) if k == "stream"}
    prologue += list(streams.values())  # the last assignment of each stream name
    return (Span(block, start, stop, prologue, hoisted, body, anchor_in_body, after, dead), params,
            {p: base_of.get(p, p) for p in params})
