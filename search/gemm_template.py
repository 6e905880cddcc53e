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

Only a *plain* template is read: exactly the parameters arg_A, arg_B and one output,
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
from typing import Optional, Union

_TMP = re.compile(r"^tmp\d+$")
_CONSTANTS = ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn")


@dataclass(frozen=True)
class TemplateGemm:
    """out[m, n] = Σ_k A[m, k]·B[k, n] over views of three launch arguments (positions in `.run`)."""

    a_arg: int
    b_arg: int
    out_arg: int
    m: int
    n: int
    k: int
    a_strides: tuple[int, int]  # (m, k)
    b_strides: tuple[int, int]  # (k, n)
    out_strides: tuple[int, int]  # (m, n)
    allow_tf32: bool

    def call(self, launch: ast.Call, op: str = "mm") -> str:
        """The statement computing the template's output by `_EMU.<op>`, from its launch statement."""
        a, b, out = (ast.unparse(launch.args[i]) for i in (self.a_arg, self.b_arg, self.out_arg))
        return (f"_EMU.{op}(torch.as_strided({a}, ({self.m}, {self.k}), {self.a_strides}), "
                f"torch.as_strided({b}, ({self.k}, {self.n}), {self.b_strides}), "
                f"out=torch.as_strided({out}, ({self.m}, {self.n}), {self.out_strides}))")


def read_template_gemm(source: str, kernel: str) -> Union[TemplateGemm, str]:
    """The GEMM of Inductor's plain `mm` template `kernel` in `source` (the kernel's module
    text), or why it is not one gemm_fp32 can replace."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return "the template's source does not parse"
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == kernel), None)
    if fn is None:
        return f"the template's definition ({kernel}) is not in the module"
    params = [a.arg for a in fn.args.args]
    outs = [p for p in params if p.startswith("out_ptr")]
    if sorted(params) != sorted(["arg_A", "arg_B", *outs]) or len(outs) != 1:
        return (f"the template takes ({', '.join(params)}), not only A, B and its output: "
                "it fuses more than the GEMM")
    if any(isinstance(n, ast.Name) and _TMP.match(n.id) for n in ast.walk(fn)):
        return "the template fuses an epilogue or a prologue into the GEMM (gemm_fp32 would drop it)"
    consts = _int_constants(fn)
    missing = [c for c in _CONSTANTS if c not in consts]
    if missing:
        return f"the template does not state {', '.join(missing)} as constants"
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call)]
    loads = [c for c in calls if _tl(c, "load")]
    stores = [c for c in calls if _tl(c, "store")]
    dots = [c for c in calls if _tl(c, "dot")]
    if [_base(c) for c in loads] != ["A", "B"] or len(dots) != 1 or len(stores) != 1:
        return "the template's loads, dot and store are not those of a plain GEMM"
    if [ast.unparse(x) for x in dots[0].args[:2]] != ["a", "b"]:
        return "the template's dot is not of its loaded operands"
    store = stores[0]
    if _base(store) != outs[0] or len(store.args) < 2 or ast.unparse(store.args[1]) != "acc":
        return "the template stores something other than its accumulator"
    m, n, k = consts["M"], consts["N"], consts["K"]
    indexes = _xindex_terms(fn)  # A's load, B's load, the store: in that order
    if len(indexes) != 3 or any(t is None for t in indexes):
        return "the template's index expressions are not affine in idx_m and idx_n"
    stated = [((consts["stride_am"], consts["stride_ak"]), (m, k)),
              ((consts["stride_bk"], consts["stride_bn"]), (k, n))]
    for (strides, sizes), terms in zip(stated, indexes[:2]):
        assert terms is not None
        # a dimension of size 1 has no stride to agree on (Inductor drops its term)
        if any(size > 1 and s != terms[i] for i, (s, size) in enumerate(zip(strides, sizes))):
            return "the template's operand indexing disagrees with the strides it states"
    out_terms = indexes[2]
    assert out_terms is not None
    allow = consts.get("ALLOW_TF32", 0)
    return TemplateGemm(a_arg=params.index("arg_A"), b_arg=params.index("arg_B"), out_arg=params.index(outs[0]),
                        m=m, n=n, k=k, a_strides=stated[0][0], b_strides=stated[1][0],
                        out_strides=(out_terms[0] if m > 1 else n, out_terms[1] if n > 1 else 1),
                        allow_tf32=bool(allow))


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
    """`A` of `tl.load(A + (xindex), ...)`."""
    ptr = call.args[0] if call.args else None
    if isinstance(ptr, ast.BinOp) and isinstance(ptr.op, ast.Add) and isinstance(ptr.left, ast.Name):
        return ptr.left.id
    return None


def _xindex_terms(fn: ast.FunctionDef) -> list[Optional[tuple[int, int]]]:
    """(coefficient of idx_m, coefficient of idx_n) of every `xindex = ...`, in source order."""
    found = [n for n in ast.walk(fn) if isinstance(n, ast.Assign) and len(n.targets) == 1
             and isinstance(n.targets[0], ast.Name) and n.targets[0].id == "xindex"]
    return [_affine(n.value) for n in sorted(found, key=lambda n: n.lineno)]


def _affine(expr: ast.expr) -> Optional[tuple[int, int]]:
    coef = {"idx_m": 0, "idx_n": 0}

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

    return (coef["idx_m"], coef["idx_n"]) if walk(expr, 1) else None
