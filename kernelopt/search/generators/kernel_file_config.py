"""Launch-configuration expansion for single-kernel files (the LLM-free generator).

A kernel file's launcher fixes its block sizes and warps as integer literals:
`BLOCK_SIZE = 1024`, `kernel[grid](..., BLOCK=1024, num_warps=4)`. Candidates
are the same file with those literals changed — a source edit located by the
AST, so nothing else in the file moves. Gates decide whether a variant is
still correct (a launcher whose grid ignores the block size fails Gate 2).
"""
from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass
from typing import cast

from kernelopt.search.generator import Attempt, Candidate, KernelTarget

TUNABLE_KEYWORDS = ("num_warps", "num_stages")


@dataclass(frozen=True)
class Knob:
    name: str
    value: int
    line: int  # 1-based
    col: int  # of the integer literal
    end_col: int


def find_knobs(source: str) -> list[Knob]:
    """Integer literals in `launch` that set a block size, warps or stages."""
    tree = ast.parse(source)
    launch = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "launch"), None)
    scopes = [n for n in tree.body if isinstance(n, ast.Assign)] + ([launch] if launch else [])
    knobs = []
    for scope in scopes:
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name, value = node.targets[0].id, node.value
            elif isinstance(node, ast.keyword) and node.arg:
                name, value = node.arg, node.value
            else:
                continue
            if not (isinstance(value, ast.Constant) and type(value.value) is int and value.value > 0):
                continue
            if _is_block(name) or name in TUNABLE_KEYWORDS:
                # ast.parse sets end_col_offset on every expression
                knobs.append(Knob(name, value.value, value.lineno, value.col_offset, cast(int, value.end_col_offset)))
    return knobs


def _is_block(name: str) -> bool:
    return name.isupper() and "BLOCK" in name


def _values(knob: Knob) -> list[int]:
    if knob.name == "num_warps":
        return [1, 2, 4, 8, 16]
    if knob.name == "num_stages":
        return [1, 2, 3, 4]
    v = knob.value
    if v & (v - 1):  # not a power of two: only its neighbours by doubling
        return [v // 2, v * 2]
    return [x for x in (v // 4, v // 2, v * 2, v * 4) if 16 <= x <= 8192]


def apply_knobs(source: str, knobs: list[Knob], values: dict[Knob, int]) -> str:
    lines = source.splitlines(True)
    for knob in sorted(knobs, key=lambda k: (k.line, k.col), reverse=True):
        if knob in values:
            line = lines[knob.line - 1]
            lines[knob.line - 1] = line[:knob.col] + str(values[knob]) + line[knob.end_col:]
    return "".join(lines)


class KernelFileConfigGenerator:
    name = "kernel_file_config"  # distinct from the Inductor-kernel launch_config generator

    def applicable(self, target: KernelTarget) -> str | None:
        try:
            knobs = find_knobs(target.source)
        except SyntaxError as exc:
            return f"the kernel file does not parse: {exc}"
        return None if knobs else "the launcher sets no block size, num_warps or num_stages as a literal"

    def propose(self, target: KernelTarget, beam: list[Attempt], history: list[Attempt],
                budget: int) -> list[Candidate]:
        knobs = find_knobs(target.source)
        seen = {tuple(sorted(a.candidate.params.items())) for a in history}
        start = dict(beam[0].candidate.params) if beam else {f"{k.name}@{k.line}": k.value for k in knobs}
        proposals: list[Candidate] = []
        # Neighbours of the best so far, one knob at a time, then pairs.
        singles = [(k, v) for k in knobs for v in _values(k) if v != start.get(f"{k.name}@{k.line}")]
        pairs = [((a, va), (b, vb)) for (a, va), (b, vb) in itertools.combinations(singles, 2) if a != b]
        for change in [[s] for s in singles] + [list(p) for p in pairs]:
            params = dict(start)
            for k, v in change:
                params[f"{k.name}@{k.line}"] = v
            key = tuple(sorted(params.items()))
            if key in seen or params == {f"{k.name}@{k.line}": k.value for k in knobs}:
                continue
            seen.add(key)
            values = {k: params[f"{k.name}@{k.line}"] for k in knobs}
            desc = " ".join(f"{k.name}={values[k]}" for k in knobs)
            proposals.append(Candidate(target.name, apply_knobs(target.source, knobs, values), self.name,
                                       desc, params=params, parent=beam[0].candidate.id if beam else None))
            if len(proposals) >= budget:
                break
        return proposals
