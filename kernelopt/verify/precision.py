"""Finding reduced-precision math in kernel source (docs/architecture.md, Precision policies).

Gate 3's first check, allclose(1e-4), already admits TF32-level error where
outputs are large, under either policy; so every result also states whether
the deployed code computes in reduced precision. The markers found here are
that statement, in words a reader (or a generator) can act on.
"""
from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable

from kernelopt.compiled.group import CONV_OPS, GEMM_OPS
from kernelopt.compiled.module_parse import dotted, op_name
from kernelopt.core.precision import FP32_EMULATIONS, FULL_FP32, LIBRARY_MODE, declared_precision


@dataclass(frozen=True)
class Marker:
    kind: str  # tf32_dot | cast | low_precision_dtype | math_mode | approx_math
    line: int
    text: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.text}"


_LOW_DTYPES = {"float16", "bfloat16", "half", "float8e4nv", "float8e5", "float8e4b15", "float8e4b8",
               "float8e5b16", "float8_e4m3fn", "float8_e5m2"}
_DTYPE_MODULES = {"tl", "triton.language", "language", "torch"}
_TF32_PRECISIONS = {"tf32", "tf32x3", "bf16x3", "bf16x6"}
def strict_verdict(replacements: dict[str, str], baseline_source: str, dtype: str = "fp32",
                   library_ops: dict[str, str] | None = None,
                   modes: dict | None = None) -> tuple[str | None, dict[str, str]]:
    """Gate 3 under `strict` (docs/architecture.md, Precision policies): (why the combination is rejected, or None;
    {replacement: declared fp32 emulation} that must pass the float64 ρ test).

    A replacement that declares a reduced precision, or whose code computes in one
    (markers beyond the baseline's) without declaring an fp32 emulation, is rejected
    whatever its error — except the one the baseline's own call ran in: a replacement of a
    library call (`library_ops`: {replacement: the op of the call it replaces}) may compute in
    TF32 where the capture recorded that call's family running TF32 (`modes`,
    compiled.capture.library_math_modes: cuDNN convolutions by PyTorch's default, cuBLAS GEMMs
    only where the user allowed it). Its other markers (casts, fp16/bf16, approximate math) are
    still rejected; a replacement of a Triton kernel (an epilogue) never computes in TF32.
    """
    emulated: dict[str, str] = {}
    library_ops, modes = library_ops or {}, modes or {}
    for name, source in replacements.items():
        declared = declared_precision(source)
        if declared in FP32_EMULATIONS:
            emulated[name] = declared
            continue
        tf32 = baseline_tf32(library_ops.get(name), modes, dtype)
        fp32_data = getattr(dtype, "value", dtype) == "fp32"  # bf16/fp16 data have fewer bits than TF32 products
        op = library_ops.get(name)
        if declared == TF32_MODE and not tf32 and fp32_data and op:
            return tf32_refusal(name, op, modes), emulated
        admitted = FULL_FP32 | {LIBRARY_MODE} | ({TF32_MODE} if tf32 or not fp32_data else set())
        if declared is not None and declared not in admitted:
            return (f"{name} computes in reduced precision (declared {declared!r}): rejected under the "
                    "strict policy whatever its error"), emulated
        new = introduced_markers(source, baseline_source, dtype)
        if tf32:  # the TF32 of the call it replaces is the baseline's own math
            new = [m for m in new if not is_tf32_marker(m)]
        elif any(is_tf32_marker(m) for m in new) and op:
            return tf32_refusal(name, op, modes), emulated
        if new:
            return (f"{name} computes in reduced precision ({new[0]}): rejected under the strict policy "
                    "whatever its error"), emulated
    return None, emulated


def whole_graph_judged(what: str, source: str, baseline_source: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """Gate 3's sources to judge for a whole-model candidate (a rewritten graph, a compile variant) whose module
    is `source`: ({name: source}, {name: the library op it computes}). Each Triton template that computes a
    convolution or a GEMM is judged apart as a replacement of that op (`<what>: <kernel>`), so that under
    `strict` it may compute in the math the baseline's calls of that op ran in (a TF32 convolution template
    where cuDNN's convolutions ran TF32), and nothing else may; the rest of the module is judged as `what`.
    Where the baseline itself computed a convolution in an IEEE template (`baseline_source`), no convolution
    template is judged as a cuDNN call: its TF32 would be lower precision than the baseline's."""
    from kernelopt.compiled.decompose import decompose
    from kernelopt.compiled.group import ieee_convolution_templates, template_kernels

    try:
        graph = decompose(source)
        ieee_baseline = bool(baseline_source) and bool(ieee_convolution_templates(decompose(baseline_source)))
    except ValueError:  # a module decompose cannot read is judged whole: no template admitted as a library call
        return {what: source}, {}
    judged: dict[str, str] = {}
    ops: dict[str, str] = {}
    rest = source
    for kernel, (op, _) in template_kernels(graph).items():
        if op in CONV_OPS and ieee_baseline:
            continue
        name = f"{what}: {kernel}"
        judged[name], ops[name] = graph.kernels[kernel].source, op
        rest = rest.replace(graph.kernels[kernel].source, "")
    return {what: rest, **judged}, ops


#: what a replacement declares (`KERNELOPT_PRECISION = "tf32"`) when it computes a library call's products in TF32
TF32_MODE = "tf32"


def baseline_tf32(op: str | None, modes: dict, dtype: str = "fp32") -> str | None:
    """The math-mode flag under which the baseline's library call `op` ran fp32 data in TF32 (recorded at
    capture), or None: it ran IEEE fp32, or `op` is no library call, or the data is not fp32."""
    if op is None or getattr(dtype, "value", dtype) != "fp32":
        return None
    for flag, _, ops in _LIBRARY_MODES:
        if op_name(op) in ops and modes.get(flag):
            return flag
    return None


def tf32_refusal(name: str, op: str, modes: dict) -> str:
    """Why a TF32 replacement is rejected under `strict`, naming the mode the baseline's call ran in."""
    for flag, what, ops in _LIBRARY_MODES:
        if op_name(op) in ops:
            recorded = "not recorded" if flag not in modes else f"`{flag}` = {modes[flag]} at capture"
            return (f"{name} computes its {what} in TF32, but the baseline's call ran in IEEE fp32 ({recorded}): "
                    "rejected under the strict policy whatever its error")
    return (f"{name} computes in TF32, but the call it replaces ({op}) is neither a cuDNN convolution nor a cuBLAS "
            "GEMM: rejected under the strict policy whatever its error")


def is_tf32_marker(marker: str) -> bool:
    """Whether a marker (`introduced_markers`' text) is TF32 products or a TF32 math mode, and nothing lower."""
    text = marker.lower()
    if "tf32x3" in text or "bf16" in text or "float16" in text or "half" in text or "float8" in text:
        return False
    return "tf32" in text


def _dotted(node: ast.AST) -> str:
    return dotted(node) or ""


def _low_dtype(node: ast.AST) -> str | None:
    """'tl.float16' for a reference to a reduced-precision dtype, else None."""
    name = _dotted(node)
    mod, _, attr = name.rpartition(".")
    return name if attr in _LOW_DTYPES and mod in _DTYPE_MODULES else None


def _constants(tree: ast.AST) -> dict[str, set]:
    """Every literal value a name is given anywhere: `X: tl.constexpr = False`,
    `X = True`, `{'X': False}` (Inductor's config_args, triton.Config) and `f(X=True)`."""
    seen: dict[str, set] = {}

    def note(name: str, value: ast.AST) -> None:
        if isinstance(value, ast.Constant):
            seen.setdefault(name, set()).add(value.value)

    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            note(node.target.id, node.value)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    note(t.id, node.value)
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if isinstance(k, ast.Constant) and isinstance(k.value, str):
                    note(k.value, v)
        elif isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg and kw.arg.isupper():
                    note(kw.arg, kw.value)
    return seen


def _values(node: ast.AST, consts: dict[str, set]) -> set | None:
    """The literal values an argument can take; None if unknown."""
    if isinstance(node, ast.Constant):
        return {node.value}
    if isinstance(node, ast.Name) and node.id in consts:
        return consts[node.id]
    return None


def _dot_marker(call: ast.Call, consts: dict[str, set]) -> str | None:
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    if "input_precision" not in kw and len(call.args) >= 4:
        kw["input_precision"] = call.args[3]
    if "input_precision" in kw:
        vals = _values(kw["input_precision"], consts)
        if vals is None:
            return "tl.dot with input_precision set from a value not fixed in the source (may be TF32)"
        low = {v for v in vals if str(v).lower() in _TF32_PRECISIONS}
        return f"tl.dot with input_precision={sorted(low)[0]!r} (reduced-precision fp32 math)" if low else None
    if "allow_tf32" in kw:
        vals = _values(kw["allow_tf32"], consts)
        name = _dotted(kw["allow_tf32"]) or "allow_tf32"
        if vals is None:
            return f"tl.dot with allow_tf32={name}, a value not fixed in the source (may be TF32)"
        if any(bool(v) for v in vals):
            return f"tl.dot with allow_tf32={name} = True: fp32 inputs compute in TF32"
        return None
    return 'tl.dot without input_precision="ieee": fp32 inputs compute in TF32 by default'


def _markers_ast(tree: ast.AST) -> list[Marker]:
    consts = _constants(tree)
    out: list[Marker] = []
    cast_lines: set[int] = set()
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Call):
            fname = _dotted(node.func)
            attr = fname.rpartition(".")[2] if fname else getattr(node.func, "attr", "")
            if attr in ("dot", "dot_scaled") and (fname.startswith(("tl.", "triton.language.")) or fname == "dot"):
                text = _dot_marker(node, consts) if attr == "dot" else "tl.dot_scaled (low-precision operands)"
                if text:
                    out.append(Marker("tf32_dot", line, text))
            elif attr == "to" and node.args and _low_dtype(node.args[0]):
                out.append(Marker("cast", line, f"cast .to({_low_dtype(node.args[0])})"))
                cast_lines.add(line)
            elif attr in ("half", "bfloat16") and isinstance(node.func, ast.Attribute) and not node.args:
                out.append(Marker("cast", line, f"cast .{attr}()"))
                cast_lines.add(line)
            elif attr == "set_float32_matmul_precision" and node.args:
                vals = _values(node.args[0], consts) or {"?"}
                if any(str(v) in ("high", "medium", "?") for v in vals):
                    out.append(Marker("math_mode", line, f"torch.set_float32_matmul_precision({sorted(map(str, vals))[0]!r})"))
            elif attr == "inline_asm_elementwise":
                asm = " ".join(a.value for a in ast.walk(node) if isinstance(a, ast.Constant) and isinstance(a.value, str))
                if ".approx" in asm or ".ftz" in asm:
                    out.append(Marker("approx_math", line, "inline PTX with approximate math (.approx/.ftz)"))
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                name = _dotted(t)
                vals = _values(node.value, consts) or set()
                if name == "KERNELOPT_PRECISION" and vals and not {str(v) for v in vals} & (
                        FP32_EMULATIONS | FULL_FP32 | {LIBRARY_MODE}):
                    out.append(Marker("math_mode", line, f"declared precision {sorted(map(str, vals))[0]!r} "
                                      "(not fp32-accurate)"))
                if name.endswith("allow_tf32") and True in vals:
                    out.append(Marker("math_mode", line, f"{name} = True"))
                elif name.endswith("fp32_precision") and {str(v).lower() for v in vals} & _TF32_PRECISIONS:
                    out.append(Marker("math_mode", line, f"{name} = {sorted(map(str, vals))[0]!r}"))
    for node in ast.walk(tree):  # dtype references outside the casts already reported
        if isinstance(node, ast.Attribute) and _low_dtype(node) and node.lineno not in cast_lines:
            out.append(Marker("low_precision_dtype", node.lineno, f"uses {_low_dtype(node)}"))
    return sorted(set(out), key=lambda m: (m.line, m.kind, m.text))


_FALLBACK_PATTERNS = [  # for source that does not parse (Gate 1 reports the syntax error)
    ("tf32_dot", re.compile(r"\btl\.dot\((?![^#]*(ieee|allow_tf32\s*=\s*False))"),
     'tl.dot without input_precision="ieee": fp32 inputs compute in TF32 by default'),
    ("low_precision_dtype", re.compile(r"\b(tl|torch)\.(float16|bfloat16|half|float8\w*)\b"), "uses a reduced-precision dtype"),
    ("math_mode", re.compile(r"allow_tf32\s*=\s*True"), "allow_tf32 = True"),
    ("math_mode", re.compile(r"set_float32_matmul_precision\(\s*['\"](high|medium)"), "set_float32_matmul_precision high/medium"),
]


def _embedded_kernels(tree: ast.AST) -> list[tuple[int, str]]:
    """Triton sources held in string literals (Inductor's `async_compile.triton('name', '''...''')`)."""
    return [(node.lineno - 1, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and "@triton.jit" in node.value and "\n" in node.value]


def reduced_precision_findings(source: str) -> list[Marker]:
    """Every place the source computes (or may compute) in reduced precision.

    Kernels embedded as strings (a whole output module) are scanned too, with
    line numbers of the enclosing file.
    """
    try:
        tree = ast.parse(source)
        found = _markers_ast(tree)
        for offset, text in _embedded_kernels(tree):
            found += [Marker(m.kind, m.line + offset, m.text) for m in reduced_precision_findings(text)]
        return sorted(set(found), key=lambda m: (m.line, m.kind, m.text))
    except SyntaxError:
        out = []
        for n, text in enumerate(source.splitlines(), 1):
            code = text.split("#", 1)[0]
            out += [Marker(kind, n, msg) for kind, pat, msg in _FALLBACK_PATTERNS if pat.search(code)]
        return out


# Mantissa bits of a job's data dtype (core.tolerance.Dtype values), and of the arithmetic a marker
# implies: a marker is reduced precision for a job only below its data's own precision. In an fp32 job
# every marker is (docs/architecture.md, Precision policies); a bf16 job's own bf16 casts, or a TF32 dot on its upcast values,
# are not: the data never had more bits than bf16's 7. fp8, approximate math and anything not
# recognised stay reduced in every dtype.
_DTYPE_BITS = {"fp32": 23, "fp16": 10, "bf16": 7}


def _marker_bits(m: Marker) -> int:
    text = m.text.lower()
    if m.kind == "approx_math" or "float8" in text or "dot_scaled" in text:
        return 0
    if "bf16x" in text or "tf32x3" in text:  # emulated fp32 named in a dot's input_precision
        return 23
    if "bfloat16" in text or "'bf16'" in text:
        return 7
    if "float16" in text or "half" in text or "tf32" in text or "'fp16'" in text:
        return 10  # fp16, and TF32 (fp32's exponent, fp16's 10 mantissa bits)
    return 0


def reduced_for(findings: list[Marker], dtype: str = "fp32") -> list[Marker]:
    """The findings that are reduced precision for data in `dtype` (all of them for fp32)."""
    bits = _DTYPE_BITS.get(getattr(dtype, "value", dtype), 23)
    return [m for m in findings if bits >= 23 or _marker_bits(m) < bits]


def reduced_precision_markers(source: str, dtype: str = "fp32") -> list[str]:
    """Human-readable markers, e.g. 'line 12: tl.dot without input_precision="ieee": ...', of the
    arithmetic below the precision of the job's data dtype."""
    return [str(m) for m in reduced_for(reduced_precision_findings(source), dtype)]


def introduced_markers(candidate: str, baseline: str, dtype: str = "fp32") -> list[str]:
    """Markers of `candidate` beyond those `baseline` already has (compared by text, with counts)."""
    base = Counter(m.text for m in reduced_precision_findings(baseline))
    out = []
    for m in reduced_for(reduced_precision_findings(candidate), dtype):
        if base[m.text] > 0:
            base[m.text] -= 1
        else:
            out.append(str(m))
    return out


def summarize(markers: list[Any]) -> str:
    return "reduced precision: " + "; ".join(map(str, markers)) if markers else "full fp32 precision"


def deployed_reduced_precision(replacements: dict[str, str], dtype: str = "fp32") -> list[str]:
    """The reduced-precision markers of the code a result deploys.

    A replacement that declares an fp32 emulation (FP32_EMULATIONS) passed Gate 3's
    float64 ρ test as one: its tensor-core arithmetic is fp32-accurate by measurement,
    and the report states its construction and ρ instead of calling it reduced.
    """
    return [m for src in replacements.values() if declared_precision(src) not in FP32_EMULATIONS
            for m in reduced_precision_markers(src, dtype)]


#: the math-mode flag (compiled.capture.library_math_modes) each family of fp32 library call obeys
_LIBRARY_MODES = (("cudnn.allow_tf32", "cuDNN convolution", CONV_OPS),
                  ("cuda.matmul.allow_tf32", "cuBLAS GEMM", GEMM_OPS))


def library_math_markers(steps: list, modes: dict, dtype: str = "fp32", replaced: Iterable[int] = ()) -> list[str]:
    """Markers of the module's fp32 library calls that run in TF32 under the math modes recorded at capture.

    Not in the source: PyTorch runs cuDNN fp32 convolutions in TF32 by default (`cudnn.allow_tf32`),
    so a baseline that calls one computes in reduced precision though no line of it says so. `steps`:
    the module's decompose steps; `replaced`: the step indices a result replaced (a group's), which
    no longer run.
    """
    if getattr(dtype, "value", dtype) != "fp32" or not modes:
        return []
    gone = set(replaced)
    out = []
    for flag, what, ops in _LIBRARY_MODES:
        if not modes.get(flag):
            continue
        calls = [s for s in steps if s.kind == "library" and s.index not in gone and op_name(s.target) in ops]
        if calls:
            out.append(f"{len(calls)} {what} call(s) on fp32 data run in TF32 (`{flag}` = True"
                       f"{', PyTorch default' if flag == 'cudnn.allow_tf32' else ''}): "
                       + ", ".join(sorted({s.target for s in calls})))
    return out


def library_mode_markers(kept: dict[str, str], modes: dict, dtype: str = "fp32") -> list[str]:
    """Markers of replacements that declare LIBRARY_MODE: each still calls the vendor library, under the
    caller's math mode, so where that mode is TF32 (as recorded for the baseline) the replacement's call
    computes in TF32 too, as the call it replaced did. `kept`: {replacement name: its library op}."""
    if getattr(dtype, "value", dtype) != "fp32" or not modes:
        return []
    out = []
    for name, op in sorted(kept.items()):
        for flag, what, ops in _LIBRARY_MODES:
            if op in ops and modes.get(flag):
                out.append(f"{name}: its {what} on fp32 data runs in TF32 under the caller's math mode "
                           f"(`{flag}` = True, as the baseline's{', PyTorch default' if flag == 'cudnn.allow_tf32' else ''})")
    return out
