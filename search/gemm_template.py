"""Reading a GEMM out of Inductor's Triton `mm` template (for gemm_fp32's template groups).

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
affine in idx_q, idx_m and idx_n. Only a *plain* template is read: exactly the parameters arg_A, arg_B and one output,
both operands loaded as they are, the accumulator stored as it is. A template that
fuses an epilogue (a bias, an activation: Inductor's `tmpN` code between the dot and
the store) or a prologue is declined with the reason: replacing its GEMM would drop
that code. Gate 2 still compares every candidate with the template's own output on
the captured inputs, so a misread layout fails there, never in a deployed model.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Optional, Sequence, Union

_TMP = re.compile(r"^tmp\d+$")
_INDEX = ("idx_q", "idx_m", "idx_n")  # batch, row, column of the output (the store's index)
#: what Inductor's template states as constants, per op
_CONSTANTS = {"mm": ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn"),
              "bmm": ("M", "N", "K", "stride_aq", "stride_am", "stride_ak", "stride_bq", "stride_bk", "stride_bn")}


@dataclass(frozen=True)
class TemplateGemm:
    """out[q, m, n] = Σ_k A[q, m, k]·B[q, k, n] over views of three launch arguments (positions in `.run`);
    for `mm` the batch dimension is absent (sizes and strides of two dimensions)."""

    op: str  # mm | bmm
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

    def call(self, launch: ast.Call) -> str:
        """The statement computing the template's output by `_EMU.<op>`, from its launch statement."""
        a, b, out = (ast.unparse(launch.args[i]) for i in (self.a_arg, self.b_arg, self.out_arg))
        return (f"_EMU.{self.op}({_view(a, self.a_size, self.a_strides, self.a_offset)}, "
                f"{_view(b, self.b_size, self.b_strides, self.b_offset)}, "
                f"out={_view(out, self.out_size, self.out_strides, 0)})")


def _view(arg: str, size: tuple, stride: tuple, offset: int) -> str:
    at = f", {arg}.storage_offset() + {offset}" if offset else ""
    return f"torch.as_strided({arg}, {size}, {stride}{at})"


def read_template_gemm(source: str, kernel: str, op: str = "mm",
                       arg_shapes: Sequence[Optional[Sequence[int]]] = ()) -> Union[TemplateGemm, str]:
    """The GEMM of Inductor's plain `mm` or `bmm` template `kernel` in `source` (the kernel's module
    text), or why it is not one gemm_fp32 can replace. `arg_shapes`: the shapes of the launch's
    arguments where the module states them (a bmm template of torch 2.11 takes its batch count from
    the grid, not from a constant: the output's shape says it)."""
    if op not in _CONSTANTS:
        return f"gemm_fp32 reads Inductor's mm and bmm templates, not its {op} template"
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
    if sorted(params) != sorted({a_src, b_src, *outs}) or len(outs) != 1:
        return (f"the template takes ({', '.join(params)}), not only A, B and its output: "
                "it fuses more than the GEMM")
    if any(isinstance(n, ast.Name) and _TMP.match(n.id) for n in ast.walk(fn)):
        return "the template fuses an epilogue or a prologue into the GEMM (gemm_fp32 would drop it)"
    consts = _int_constants(fn)
    missing = [c for c in _CONSTANTS[op] if c not in consts]
    if missing:
        return f"the template does not state {', '.join(missing)} as constants"
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call)]
    loads = [_base(c) for c in calls if _tl(c, "load")]
    stores = [c for c in calls if _tl(c, "store")]
    dots = [c for c in calls if _tl(c, "dot")]
    # one load of each operand, or two (Inductor's EVEN_K branches): nothing else is read
    if (loads not in (["A", "B"], ["A", "B", "A", "B"])) or len(dots) != 1 or len(stores) != 1:
        return "the template's loads, dot and store are not those of a plain GEMM"
    if [ast.unparse(x) for x in dots[0].args[:2]] != ["a", "b"]:
        return "the template's dot is not of its loaded operands"
    store = stores[0]
    if _base(store) != outs[0] or len(store.args) < 2 or ast.unparse(store.args[1]) != "acc":
        return "the template stores something other than its accumulator"
    m, n, k = consts["M"], consts["N"], consts["K"]
    out_index = params.index(outs[0])
    q = consts.get("BATCH", 1)
    if op == "bmm" and "BATCH" not in consts:
        shape = arg_shapes[out_index] if out_index < len(arg_shapes) else None
        if shape is None or len(shape) != 3 or list(shape[1:]) != [m, n]:
            return "the bmm template's batch count is neither a constant nor its output's stated shape"
        q = int(shape[0])
    a_strides = (consts["stride_am"], consts["stride_ak"])
    b_strides = (consts["stride_bk"], consts["stride_bn"])
    indexes = _xindex_terms(fn)  # [A's load, B's load,] the store: in source order
    if len(indexes) not in (1, 3) or any(t is None for t in indexes):
        return "the template's index expressions are not affine in idx_q, idx_m and idx_n"
    if len(indexes) == 3:  # the operands are read through xindex too: it must agree with the strides stated
        for strides, sizes, terms in ((a_strides, (m, k), indexes[0]), (b_strides, (k, n), indexes[1])):
            assert terms is not None
            # a dimension of size 1 has no stride to agree on (Inductor drops its term)
            if terms[0] != 0 or any(size > 1 and st != terms[1 + i]
                                    for i, (st, size) in enumerate(zip(strides, sizes))):
                return "the template's operand indexing disagrees with the strides it states"
    terms = indexes[-1]
    assert terms is not None
    # the output's strides; a dimension of size 1 gets the one a contiguous tensor would have
    out_strides = (terms[0] if q > 1 else m * n, terms[1] if m > 1 else n, terms[2] if n > 1 else 1)
    allow = bool(consts.get("ALLOW_TF32", 0))
    args = dict(a_arg=params.index(a_src), b_arg=params.index(b_src), out_arg=out_index, a_offset=a_offset,
                b_offset=b_offset, allow_tf32=allow)
    if op == "mm":
        if terms[0] != 0:
            return "the mm template's output index has a batch term"
        return TemplateGemm(op="mm", a_size=(m, k), a_strides=a_strides, b_size=(k, n), b_strides=b_strides,
                            out_size=(m, n), out_strides=out_strides[1:], **args)
    return TemplateGemm(op="bmm", a_size=(q, m, k), a_strides=(consts["stride_aq"], *a_strides),
                        b_size=(q, k, n), b_strides=(consts["stride_bq"], *b_strides),
                        out_size=(q, m, n), out_strides=out_strides, **args)


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
            value, offset = value.left, value.right.value
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


def _xindex_terms(fn: ast.FunctionDef) -> list[Optional[tuple[int, int, int]]]:
    """(coefficients of idx_q, idx_m, idx_n) of every `xindex = ...`, in source order."""
    found = [n for n in ast.walk(fn) if isinstance(n, ast.Assign) and len(n.targets) == 1
             and isinstance(n.targets[0], ast.Name) and n.targets[0].id == "xindex"]
    return [_affine(n.value) for n in sorted(found, key=lambda n: n.lineno)]


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
