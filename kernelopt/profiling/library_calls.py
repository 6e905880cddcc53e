"""Each library call's own time, from its own launch.

The profiler names a vendor library's kernels, not the calls that launched them: five GEMM calls of a model
that all run the same cuBLAS kernel show as one name, and a share by name gave each of the five groups the
time of all five ("87–88% of GPU time" each). Here each library call statement of Inductor's `call()` runs
inside a profiler range named after its step (`kernelopt.step:<index>`): the range's device time is the time
of the kernels that call launched (torch.profiler links each kernel to the CPU operation that launched it),
so the calls' times add up to no more than the model's.
"""
from __future__ import annotations

import ast
from typing import Any, Callable, Mapping

RANGE_PREFIX = "kernelopt.step:"
_RANGE_FN = "_kernelopt_profiler_range"


def instrumented_source(source: str, step_lines: Mapping[int, int]) -> str:
    """Inductor's module with each library call (`step index -> its line`) inside a profiler range.

    Only statements are wrapped, never moved: the module computes exactly what it did.
    Raises ValueError when a step's line holds no statement of `call()`.
    """
    tree = ast.parse(source)
    call = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "call"), None)
    if call is None:
        call = next((n for node in tree.body if isinstance(node, ast.ClassDef) for n in node.body
                     if isinstance(n, ast.FunctionDef) and n.name == "call"), None)
    if call is None:
        raise ValueError("the module has no call()")
    by_line = {line: index for index, line in step_lines.items()}
    found: set[int] = set()

    def wrap(body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in body:
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    setattr(stmt, field, wrap(inner))
            index = by_line.get(stmt.lineno)
            if index is None or isinstance(stmt, (ast.With, ast.If, ast.For, ast.While, ast.Try)):
                out.append(stmt)
                continue
            found.add(index)
            item = ast.withitem(context_expr=ast.Call(func=ast.Name(_RANGE_FN, ast.Load()),
                                                      args=[ast.Constant(f"{RANGE_PREFIX}{index}")], keywords=[]))
            out.append(ast.With(items=[item], body=[stmt]))
        return out

    call.body = wrap(call.body)
    missing = sorted(set(step_lines) - found)
    if missing:
        raise ValueError(f"no statement of call() at the lines of steps {missing}")
    at = next((i for i, n in enumerate(tree.body)
               if not (isinstance(n, ast.ImportFrom) and n.module == "__future__")), len(tree.body))
    tree.body.insert(at, ast.ImportFrom(module="torch.profiler", names=[ast.alias("record_function", _RANGE_FN)],
                                        level=0))
    return ast.unparse(ast.fix_missing_locations(tree))


def call_times_us(run: Callable[[], Any], iters: int, cuda: bool) -> dict[int, float]:
    """Each instrumented step's time per model call, in µs: its kernels' device time on a GPU, its CPU time
    otherwise (the CPU figure only tests the attribution: on the CPU the library call *is* its time)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        for _ in range(iters):
            run()
        if cuda:
            torch.cuda.synchronize()
    out: dict[int, float] = {}
    for evt in prof.key_averages():
        if evt.key.startswith(RANGE_PREFIX):
            total = event_us(evt, ("device_time_total", "cuda_time_total") if cuda else ("cpu_time_total",))
            out[int(evt.key[len(RANGE_PREFIX):])] = total / iters
    return out


def call_shares(times_us: Mapping[int, float], library_share: float) -> dict[str, float]:
    """The library's share of the model's GPU time, split over its calls by their own times (step index as a
    string: the profile is JSON). They add up to `library_share`, never more."""
    total = sum(t for t in times_us.values() if t > 0)
    if total <= 0:
        return {}
    return {str(i): library_share * max(t, 0.0) / total for i, t in sorted(times_us.items())}


def event_us(evt: Any, names: tuple[str, ...]) -> float:
    """A profiler event's time in µs under the first of `names` it has and is non-zero (the attributes were
    renamed across torch releases: cuda_* became device_*)."""
    for name in names:
        value = getattr(evt, name, None)
        if value:
            return float(value)
    return 0.0
