"""Normalized-source fingerprints: two candidates with the same fingerprint are the same program.

A candidate is measured once (docs/architecture.md, Search): identical candidates are never re-measured.
"Identical" is decided on the normalized source, not the text, because an LLM that
re-sends an earlier kernel with a new comment, other spacing or a renamed temporary
would otherwise cost a Gate 1-2 run and a timing each time.

Normalization (on the AST, so it never changes what the code does):
- comments, blank lines, spacing, quoting and redundant parentheses go (the AST has none);
- docstrings go (a string statement at the head of a module, class or function);
- local variables of a function — names assigned in its body that are not parameters,
  not declared global/nonlocal, in a function without closures — are
  renamed to positional names (`<local0>`, `<local1>`, ...: never a real identifier, so never
  a collision) in order of first appearance.
  Parameters are kept: callers pass them by keyword (a Triton launch's BLOCK_SIZE=...),
  so renaming them could make different programs look alike. Module-level names,
  attributes and keyword arguments are kept for the same reason.
A source that does not parse falls back to its text with comments and whitespace removed.
"""
from __future__ import annotations

import ast
import hashlib
import io
import tokenize


def fingerprint(source: str) -> str:
    """A short hex digest of `source`'s normalized form."""
    return hashlib.sha256(normalize(source).encode()).hexdigest()[:16]


def normalize(source: str) -> str:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return _token_text(source)
    _strip_docstrings(tree)
    for fn in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        _rename_locals(fn)
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def _strip_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]


def _rename_locals(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    params |= {a.arg for a in (fn.args.vararg, fn.args.kwarg) if a is not None}
    declared: set[str] = set()
    nested = False
    for node in ast.walk(fn):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif node is not fn and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            nested = True
    if nested:  # a closure may share a name with its enclosing function: leave such functions alone
        return
    stored = [n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
    # Names bound other than as a Name node (`except E as e`, `import m`, `case [a]`) are kept as they are,
    # and so is every other use of them: renaming only some uses of a name could merge different programs.
    other = _non_name_bindings(fn)
    local = [name for name in dict.fromkeys(stored) if name not in params and name not in declared
             and name not in other]
    # ast.walk is breadth-first: order the names by their position in the source instead
    first_seen: dict[str, tuple[int, int]] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and n.id in local:
            pos = (n.lineno, n.col_offset)
            first_seen[n.id] = min(first_seen.get(n.id, pos), pos)
    mapping = {name: f"<local{i}>" for i, name in enumerate(sorted(local, key=lambda k: first_seen[k]))}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and n.id in mapping:
            n.id = mapping[n.id]


def _non_name_bindings(fn: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
    return names


def _token_text(source: str) -> str:
    """The tokens of `source` without comments and layout (for sources that do not parse)."""
    out: list[str] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                            tokenize.ENDMARKER):
                continue
            out.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        # unbalanced brackets or quotes: comments cut per line (a '#' in a string too), whitespace collapsed
        return " ".join(" ".join(line.split("#", 1)[0] for line in source.splitlines()).split())
    return " ".join(out)
