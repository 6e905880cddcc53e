"""Reading a GEMM out of Inductor's Triton `mm`/`addmm`/`bmm` templates (for gemm_fp32's template groups).

Under max-autotune Inductor may launch its own Triton template for a GEMM instead of
cuBLAS (`triton_tem_fused_mm_0`; on the H200, a 16384×32 · 32×16384 fp32 GEMM). The
template is a library group's anchor like `extern_kernels.mm` (compiled.group); what
gemm_fp32 needs to replace it is the product it computes: which launch arguments are
A, B and the output, and the (M, K)·(K, N) → (M, N) views of them the template
indexes. Inductor writes all of it into the kernel as constants:

    def triton_tem_fused_mm_0(arg_A, arg_B, out_ptr0):
        ...
        M = 16384
        N = 16384
        K = 32
        stride_am = 32
        stride_ak = 1
        stride_bk = 16384
        stride_bn = 1
        ...
        xindex = idx_n + 32*idx_m          # A's load: A[m, k]
        a = tl.load(A + (xindex))
        ...
        xindex = idx_n + 16384*idx_m       # B's load: B[k, n]
        b = tl.load(B + (xindex))
        acc += tl.dot(a, b, allow_tf32=ALLOW_TF32, out_dtype=ACC_TYPE)
        ...
        xindex = idx_n + 16384*idx_m       # the output: out[m, n]
        tl.store(out_ptr0 + (tl.broadcast_to(xindex, [BLOCK_M, BLOCK_N])), acc, mask)

Inductor's `bmm` template states the batch strides as well (torch 2.11 takes the batch count
from the grid: the output's stated shape gives it), reads its operands through pointers
advanced by those strides (`tl.load(A)`), and may take both from one buffer at offsets
(`A = arg_B`, `B = arg_B + 64`: q·kᵀ out of a fused qkv projection); its store's index is
affine in idx_q, idx_m and idx_n.

Only a *plain* template is read: exactly the operands' parameters and one output,
both operands loaded as they are, the accumulator stored as it is — or, for `addmm`,
the accumulator plus a bias loaded through an affine index and nothing else (a Linear
layer's `tmp0 = tl.load(in_ptr0 + ...)`, `tmp1 = acc + tmp0`). A template that fuses
more (an activation, a scale: Inductor's `tmpN` code between the dot and the store)
or a prologue is declined with the reason: replacing its GEMM would drop that code.
Gate 2 still compares every candidate with the template's own output on the captured
inputs, so a misread layout fails there, never in a deployed model.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

from kernelopt.compiled.group import BATCH_STRIDES

_TMP = re.compile(r"^tmp\d+$")
_INDEX = ("idx_q", "idx_m", "idx_n")  # batch, row, column of the output (the store's index)
#: what Inductor's template states as constants, per op
_CONSTANTS = {"mm": ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn"),
              "addmm": ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn"),
              "bmm": ("M", "N", "K", "stride_aq", "stride_am", "stride_ak", "stride_bq", "stride_bk", "stride_bn")}


@dataclass(frozen=True)
class TemplateGemm:
    """out[q, m, n] = Σ_k A[q, m, k]·B[q, k, n] (+ bias[q, m, n] for addmm) over views of the launch's
    arguments (positions in `.run`); for mm/addmm the batch dimension is absent."""

    op: str  # mm | addmm | bmm
    a_arg: int
    b_arg: int
    out_arg: int
    a_offset: int  # elements past the argument's own start (`B = arg_B + 64`: a slice of one buffer)
    b_offset: int
    a_size: tuple[int, ...]
    a_strides: tuple[int, ...]
    b_size: tuple[int, ...]
    b_strides: tuple[int, ...]
    out_size: tuple[int, ...]
    out_strides: tuple[int, ...]
    allow_tf32: bool
    bias_arg: Optional[int] = None  # addmm: the bias, read broadcast (a stride 0 where Inductor's index has none)
    bias_strides: tuple[int, ...] = ()

    def call(self, launch: ast.Call) -> str:
        """The statement computing the template's output by `_EMU.<op>`, from its launch statement."""
        a, b, out = (ast.unparse(launch.args[i]) for i in (self.a_arg, self.b_arg, self.out_arg))
        operands = (f"{_view(a, self.a_size, self.a_strides, self.a_offset)}, "
                    f"{_view(b, self.b_size, self.b_strides, self.b_offset)}, "
                    f"out={_view(out, self.out_size, self.out_strides, 0)}")
        if self.bias_arg is None:
            return f"_EMU.{self.op}({operands})"
        bias = _view(ast.unparse(launch.args[self.bias_arg]), self.out_size, self.bias_strides, 0)
        return f"_EMU.{self.op}({bias}, {operands})"


def _view(arg: str, size: tuple, stride: tuple, offset: int) -> str:
    at = f", {arg}.storage_offset() + {offset}" if offset else ""
    return f"torch.as_strided({arg}, {size}, {stride}{at})"


def read_template_gemm(source: str, kernel: str, op: str = "mm",
                       arg_shapes: Sequence[Optional[Sequence[int]]] = ()) -> Union[TemplateGemm, str]:
    """The GEMM of Inductor's plain `mm`, `addmm` (bias added, nothing else) or `bmm` template
    `kernel` in `source` (the kernel's module text), or why it is not one gemm_fp32 can replace.
    `op`: the group's op (compiled.group, from the aten ops Inductor names the kernel after); the template's
    own text decides between mm, addmm and bmm (`template_op`), since those names include the ops of
    nodes fused into it (level3/04's q·kᵀ bmm template is named `..._addmm_bmm_...` after the qkv
    projection whose output it reads).
    `arg_shapes`: the shapes of the launch's arguments where the module states them (a bmm template
    of torch 2.11 takes its batch count from the grid, not from a constant: the output's shape says it)."""
    if op not in _CONSTANTS:
        return f"gemm_fp32 reads Inductor's mm, addmm and bmm templates, not its {op} template"
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return "the template's source does not parse"
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == kernel), None)
    if fn is None:
        return f"the template's definition ({kernel}) is not in the module"
    params = [a.arg for a in fn.args.args]
    outs = [p for p in params if p.startswith("out_ptr")]
    operands = _operand_sources(fn)
    if operands is None:
        return "the template does not take its operands A and B straight from its arguments"
    (a_src, a_offset), (b_src, b_offset) = operands
    extra = [p for p in params if p not in {a_src, b_src, *outs}]
    consts = _int_constants(fn)
    op = template_op(consts, extra)
    if len(outs) != 1 or len(extra) != (1 if op == "addmm" else 0):
        return (f"the template takes ({', '.join(params)}), not only A, B{', a bias' if op == 'addmm' else ''} "
                "and its output: it fuses more than the GEMM")
    missing = [c for c in _CONSTANTS[op] if c not in consts]
    if missing:
        return f"the template does not state {', '.join(missing)} as constants"
    m, n, k = consts["M"], consts["N"], consts["K"]
    a_strides = (consts["stride_am"], consts["stride_ak"])
    b_strides = (consts["stride_bk"], consts["stride_bn"])
    calls = [c for c in ast.walk(fn) if isinstance(c, ast.Call)]
    loads = [c for c in calls if _tl(c, "load")]
    stores = [c for c in calls if _tl(c, "store")]
    dots = [c for c in calls if _tl(c, "dot")]
    operand_loads = [c for c in loads if _base(c) in ("A", "B")]
    # one load of each operand, or two (Inductor's EVEN_K branches): nothing else is read but a bias
    if [_base(c) for c in operand_loads] not in (["A", "B"], ["A", "B", "A", "B"]) or len(dots) != 1 \
            or len(stores) != 1 or len(loads) - len(operand_loads) != len(extra):
        return "the template's loads, dot and store are not those of a plain GEMM"
    if [ast.unparse(x) for x in dots[0].args[:2]] != ["a", "b"]:
        return "the template's dot is not of its loaded operands"
    for load in operand_loads:  # where the operands are read through an index, it must be the stated strides
        strides, sizes = (a_strides, (m, k)) if _base(load) == "A" else (b_strides, (k, n))
        terms = _load_index(fn, load)
        if terms == "unread":
            return "the template's operand index is not affine in idx_m and idx_n"
        # a dimension of size 1 has no stride to agree on (Inductor drops its term)
        if terms is not None and (terms[0] != 0 or any(size > 1 and st != terms[1 + i]
                                                       for i, (st, size) in enumerate(zip(strides, sizes, strict=True)))):
            return "the template's operand indexing disagrees with the strides it states"
    store = stores[0]
    stored = ast.unparse(store.args[1]) if len(store.args) >= 2 else ""
    bias = _bias_epilogue(fn, extra[0], stored) if extra else None
    if isinstance(bias, str):
        return bias
    if any(isinstance(x, ast.Name) and _TMP.match(x.id) for x in ast.walk(fn)) and bias is None:
        return "the template fuses an epilogue or a prologue into the GEMM (gemm_fp32 would drop it)"
    if _base(store) != outs[0] or (bias is None and stored != "acc"):
        return "the template stores something other than its accumulator"
    terms = _load_index(fn, store)
    if not isinstance(terms, tuple):
        return "the template's output index is not affine in idx_q, idx_m and idx_n"
    out_index = params.index(outs[0])
    q = consts.get("BATCH", 1)
    if op == "bmm" and "BATCH" not in consts:
        shape = arg_shapes[out_index] if out_index < len(arg_shapes) else None
        if shape is None or len(shape) != 3 or list(shape[1:]) != [m, n]:
            return "the bmm template's batch count is neither a constant nor its output's stated shape"
        q = int(shape[0])
    # the output's strides; a dimension of size 1 gets the one a contiguous tensor would have
    out_strides = (terms[0] if q > 1 else m * n, terms[1] if m > 1 else n, terms[2] if n > 1 else 1)
    args: dict[str, Any] = dict(a_arg=params.index(a_src), b_arg=params.index(b_src), out_arg=out_index, a_offset=a_offset,
                b_offset=b_offset, allow_tf32=bool(consts.get("ALLOW_TF32", 0)))
    if op == "bmm":
        return TemplateGemm(op="bmm", a_size=(q, m, k), a_strides=(consts["stride_aq"], *a_strides),
                            b_size=(q, k, n), b_strides=(consts["stride_bq"], *b_strides),
                            out_size=(q, m, n), out_strides=out_strides, **args)
    if terms[0] != 0 or (bias is not None and bias[0] != 0):
        return f"the {op} template's index has a batch term"
    return TemplateGemm(op=op, a_size=(m, k), a_strides=a_strides, b_size=(k, n), b_strides=b_strides,
                        out_size=(m, n), out_strides=out_strides[1:],
                        bias_arg=params.index(extra[0]) if bias is not None else None,
                        bias_strides=tuple(bias[1:]) if bias is not None else (), **args)


def template_op(consts: dict[str, int], extra: Sequence[str]) -> str:
    """What a template computes, from its text: `bmm` where it states batch strides (Inductor's bmm
    template; a baddbmm's bias would be an extra parameter, declined after), `addmm` where it takes one
    parameter besides its operands and output (read as a bias, or declined), else `mm`."""
    if any(c in consts for c in BATCH_STRIDES):
        return "bmm"
    return "addmm" if len(extra) == 1 else "mm"


def _bias_epilogue(fn: ast.FunctionDef, bias_param: str, stored: str) -> Union[tuple[int, int, int], str]:
    """addmm's epilogue, exactly `tmp0 = tl.load(<bias> + (<index>), ...)`, `tmp1 = acc + tmp0`, the store
    of tmp1: the bias index's (idx_q, idx_m, idx_n) coefficients; anything more is declined (a scale, an
    activation: Inductor's code for alpha, beta or a fused op)."""
    # (name, value) of each `tmpN = ...`
    tmps = [(x.targets[0].id, x.value) for x in ast.walk(fn) if isinstance(x, ast.Assign) and len(x.targets) == 1
            and isinstance(x.targets[0], ast.Name) and _TMP.match(x.targets[0].id)]
    loads = [(name, v) for name, v in tmps if isinstance(v, ast.Call) and _tl(v, "load")]
    sums = [(name, v) for name, v in tmps if isinstance(v, ast.BinOp) and isinstance(v.op, ast.Add)]
    if len(tmps) != 2 or len(loads) != 1 or len(sums) != 1 or _base(loads[0][1]) != bias_param:
        return "the addmm template's epilogue does more than add its bias"
    (bias_name, load), (sum_name, total) = loads[0], sums[0]
    added = sorted(ast.unparse(x) for x in (total.left, total.right))
    if added != sorted(["acc", bias_name]) or stored != sum_name:
        return "the addmm template's epilogue does more than add its bias"
    terms = _load_index(fn, load)
    if not isinstance(terms, tuple):
        return "the addmm template's bias index is not affine in idx_m and idx_n"
    return terms


def _operand_sources(fn: ast.FunctionDef) -> Optional[tuple[tuple[str, int], tuple[str, int]]]:
    """((argument, offset) of A, (argument, offset) of B) from the kernel's first `A = arg_A` and
    `B = arg_B + 128` (an offset in elements); None where they are anything else."""
    found: dict[str, tuple[str, int]] = {}
    for node in fn.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name, value = node.targets[0].id, node.value
        if name not in ("A", "B") or name in found:
            continue
        offset = 0
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and isinstance(value.right, ast.Constant) \
                and isinstance(value.right.value, int) and not isinstance(value.right.value, bool):
            offset = value.right.value
            value = value.left
        if not (isinstance(value, ast.Name) and value.id.startswith("arg_")):
            return None
        found[name] = (value.id, offset)
    return (found["A"], found["B"]) if set(found) == {"A", "B"} else None


def _int_constants(fn: ast.FunctionDef) -> dict[str, int]:
    """`NAME = 3` and `NAME : tl.constexpr = True` at the kernel's top level."""
    out: dict[str, int] = {}
    for node in fn.body:
        target, value = None, None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant) and isinstance(value.value, (int, bool)):
            out[target.id] = int(value.value)
    return out


def _tl(call: ast.Call, name: str) -> bool:
    f = call.func
    return isinstance(f, ast.Attribute) and f.attr == name and isinstance(f.value, ast.Name) and f.value.id == "tl"


def _base(call: ast.Call) -> Optional[str]:
    """`A` of `tl.load(A + (xindex), ...)` or of `tl.load(A, ...)`."""
    ptr = call.args[0] if call.args else None
    if isinstance(ptr, ast.Name):
        return ptr.id
    if isinstance(ptr, ast.BinOp) and isinstance(ptr.op, ast.Add) and isinstance(ptr.left, ast.Name):
        return ptr.left.id
    return None


def _load_index(fn: ast.FunctionDef, call: ast.Call) -> Union[tuple[int, int, int], str, None]:
    """The (idx_q, idx_m, idx_n) coefficients of a load's or a store's pointer offset: None for a bare
    pointer (`tl.load(A)`: the template advanced A itself), "unread" where it is not affine. `xindex`
    is the last one assigned above the call; `tl.broadcast_to(e, ...)` and `e.broadcast_to(...)` are e."""
    ptr = call.args[0]
    if isinstance(ptr, ast.Name):
        return None
    assert isinstance(ptr, ast.BinOp)
    expr = ptr.right
    while True:
        if isinstance(expr, ast.Call) and _tl(expr, "broadcast_to") and expr.args:
            expr = expr.args[0]
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) \
                and expr.func.attr == "broadcast_to":
            expr = expr.func.value
        elif isinstance(expr, ast.Name) and expr.id == "xindex":
            above = [x for x in ast.walk(fn) if isinstance(x, ast.Assign) and len(x.targets) == 1
                     and isinstance(x.targets[0], ast.Name) and x.targets[0].id == "xindex"
                     and x.lineno <= call.lineno]
            if not above:
                return "unread"
            expr = max(above, key=lambda x: x.lineno).value
        else:
            break
    terms = _affine(expr)
    return terms if terms is not None else "unread"


def _affine(expr: ast.expr) -> Optional[tuple[int, int, int]]:
    coef = dict.fromkeys(_INDEX, 0)

    def walk(e: ast.expr, scale: int) -> bool:
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
            return walk(e.left, scale) and walk(e.right, scale)
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mult):
            for c, rest in ((e.left, e.right), (e.right, e.left)):
                if isinstance(c, ast.Constant) and isinstance(c.value, int):
                    return walk(rest, scale * c.value)
            return False
        if isinstance(e, ast.Name) and e.id in coef:
            coef[e.id] += scale
            return True
        return False

    return (coef["idx_q"], coef["idx_m"], coef["idx_n"]) if walk(expr, 1) else None
