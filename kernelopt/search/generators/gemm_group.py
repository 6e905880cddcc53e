"""fp32-accurate tensor-core GEMMs for library groups.

Target: a library group (compiled.group) anchored on `extern_kernels.mm /
addmm / bmm / baddbmm`, or on Inductor's own Triton `mm`/`addmm`/`bmm` template
where it computes the plain product (search.generators.gemm_template reads which arguments
and views). A candidate is the group's own statements with the library call (or
the template's launch) swapped for an fp32-accurate tensor-core construction of
kernels/gemm_emulated.py (embedded verbatim as one source, so the candidate and the
`optimized_module.py` artifact need no KernelOPT); the epilogue kernels that
follow run unchanged, Inductor's own, bound from the output module. addmm's
and baddbmm's bias (and alpha, beta) are fused into the GEMM's epilogue.

Construction per shape, as benchmarks/results/2026-12-01-h200-gemm-fp32
recommends (`choose_method`, decided at run time on the real operands):

- ``presplit`` (Triton, operands split once into K-major hi/lo, three TF32
  products per K-tile): compute-bound shapes, 1.43-1.92x cuBLAS fp32, ρ 0.16-0.21;
- ``bf16x6`` (Triton, split-K): large K with few output tiles, 1.30x, ρ 0.29;
- ``split3`` (cuBLAS TF32 on [A_lo|A_hi|A_hi]·[B_hi;B_lo;B_hi] per K-chunk of 256):
  small K (output-bound), 1.90x, ρ 0.85; also wherever the Triton kernel cannot
  run (not Hopper, dimensions not multiples of 4, a CPU without the interpreter).

Other constructions are proposed after the automatic one, to let the search's
timing decide. Under the `tf32` policy the generator also proposes plain TF32
(cuBLAS with TF32 math for that call only), which Gate 3 admits under `tf32`
only: every candidate declares its arithmetic in `KERNELOPT_PRECISION`, and
under `strict` a declared reduced precision is rejected while a declared fp32
emulation must pass the float64 ρ test (verify.precision.strict_verdict).
"""
from __future__ import annotations

import ast
from typing import Optional, Union

from kernelopt.compiled.group import GEMM_OPS, LibraryGroup, group_module_source
from kernelopt.kernels import gemm_emulated
from kernelopt.search.generator import Attempt, Candidate, KernelTarget
from kernelopt.search.generators.gemm_template import TemplateGemm, read_template_gemm
from kernelopt.search.registry import dtype_reason

NAME = "gemm_fp32"
#: construction -> one line for reports (measured: the results README)
CONSTRUCTIONS = {
    "auto": "per shape at run time: presplit (compute-bound), bf16x6 split-K (large K, few tiles), "
            "split3 (small K, or no Triton kernel)",
    "presplit": "Triton 3xTF32 on operands split once into K-major hi/lo (TMA, per-K-tile sums); "
                "H200: 1.43-1.92x cuBLAS fp32, rho 0.16-0.21",
    "bf16x6": "Triton bf16x6 (3 bf16 parts, 6 products), split-K for large K; H200: 1.30x at K=524288, rho 0.29",
    "split3": "cuBLAS 3xTF32, one GEMM on [A_lo|A_hi|A_hi]·[B_hi;B_lo;B_hi] per K-chunk of 256, chunks added "
              "in fp32; H200: 1.90x at K=64, rho 0.85",
    "tf32": "plain TF32 on cuBLAS (NOT fp32-accurate: 'tf32' policy only)",
    "bf16x3": "Triton bf16x3 (2 bf16 parts, 3 products; NOT fp32-accurate, 'tf32' policy only); H200: "
              "1.9x cuBLAS fp32, rho 0.9-18 where cuBLAS TF32's is 60-870",
}
FP32_CONSTRUCTIONS = ("auto", "presplit", "bf16x6", "split3")
# Under 'tf32': plain TF32 first (fastest), then bf16x3, 30-100x closer to float64 than TF32 (the
# 2026-12-01 GEMM table): on the H200 plain TF32 failed Gate 2's allclose(1e-3) on long-K or summed
# GEMMs (suite level1/16, 22, level2/05, 06), where only the fp32 emulations were left.
REDUCED_CONSTRUCTIONS = ("tf32", "bf16x3")

_EMU_CLASS = '''

def choose_method(nb, m, n, k, a3, b3):
    """The construction for one GEMM (benchmarks/results/2026-12-01-h200-gemm-fp32)."""
    on_triton = (a3.is_cuda and not _interpreting()) or (_interpreting() and not a3.is_cuda)
    if not on_triton or triton_supported(a3, b3) is not None:
        return "split3"
    if k <= 256:
        return "split3"  # output-bound: one pass over the output beats a Triton tile loop
    tiles = nb * -(-m // 128) * -(-n // 128)
    if tiles < _num_sms(a3.device) // 2 and k >= 16 * 64:
        return "bf16x6"  # few output tiles, long K: split-K
    return "presplit"


def _direct_out(out, shape, *operands):
    """`out` as the [nb, M, N] tensor a construction writes into directly, or None where it must be
    written beside and copied: not contiguous fp32 of that shape, or sharing memory with an operand or
    the bias (a broadcast bias read after its row was overwritten). Writing into it saves a pass over
    the output: twice its bytes, the whole cost of an output-bound GEMM's copy."""
    if out is None or out.dtype != torch.float32 or not out.is_contiguous() or out.numel() != math.prod(shape):
        return None
    out3 = out.view(shape)
    storage = out.untyped_storage().data_ptr()
    if any(t is not None and t.untyped_storage().data_ptr() == storage for t in operands):
        return None
    return out3


class _Emu:
    """extern_kernels.mm/addmm/bmm/baddbmm, computed by the construction METHOD."""

    def __init__(self, method):
        self.method = method
        self.last_method = None

    def _gemm(self, bias3, a3, b3, alpha, beta, out):
        nb, m, k = a3.shape
        n = b3.shape[2]
        method = self.method if self.method != "auto" else choose_method(nb, m, n, k, a3, b3)
        if method in ("presplit", "bf16x6", "bf16x3") and (triton_supported(a3, b3) is not None
                                                           or (not a3.is_cuda and not _interpreting())):
            method = "split3"
        self.last_method = method
        into = _direct_out(out, (nb, m, n), a3, b3, bias3)
        if method == "tf32":
            with tf32_matmul_scope(True):
                r = torch.baddbmm(bias3, a3, b3, beta=beta, alpha=alpha, out=into) if bias3 is not None \
                    else torch.bmm(a3, b3, out=into)  # out=None: a new tensor
        elif method == "split3":
            r = _split3_core(a3, b3, bias3, beta, alpha, "rn", "auto", out=into)
        else:
            r = _triton_core(a3, b3, bias3, beta, alpha, method, None, True, None, out=into)
        if out is None:
            return r
        if into is None:  # written beside it (a layout or an overlap the constructions do not write into)
            out.copy_(r.view(out.shape))
        return out

    def mm(self, a, b, out=None):
        r = self._gemm(None, a.unsqueeze(0), b.unsqueeze(0), 1.0, 1.0, out)
        return r if out is not None else r[0]

    def addmm(self, bias, a, b, alpha=1, beta=1, out=None):
        bias3 = bias.expand(a.shape[0], b.shape[1]).unsqueeze(0)
        r = self._gemm(bias3, a.unsqueeze(0), b.unsqueeze(0), float(alpha), float(beta), out)
        return r if out is not None else r[0]

    def bmm(self, a, b, out=None):
        return self._gemm(None, a, b, 1.0, 1.0, out)

    def baddbmm(self, bias, a, b, alpha=1, beta=1, out=None):
        bias3 = bias.expand(a.shape[0], a.shape[1], b.shape[2])
        return self._gemm(bias3, a, b, float(alpha), float(beta), out)
'''


def _gemm_library_source() -> str:
    return gemm_emulated.library_source()


def _anchor_call(group: LibraryGroup) -> Optional[ast.Call]:
    if not (0 <= group.anchor_in_body < len(group.body)):
        return None
    stmt = ast.parse(group.body[group.anchor_in_body]).body[0]
    call = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
    return call if isinstance(call, ast.Call) else None


def _template_gemm(group: LibraryGroup) -> Union[TemplateGemm, str]:
    """The plain mm/addmm/bmm of the group's Triton template anchor, or why there is none (search.generators.gemm_template)."""
    launch = _anchor_call(group)
    if launch is None:
        return "the template's launch is not a call statement"
    shapes = [group.param_shapes.get(a.id, [None])[0] if isinstance(a, ast.Name) else None for a in launch.args]
    read = read_template_gemm(group.kernel_sources.get(group.anchor_target, ""), group.anchor_target, group.op,
                              shapes)
    if not isinstance(read, str) and len(launch.args) <= max(read.a_arg, read.b_arg, read.out_arg):
        return "the template's launch does not pass A, B and its output by position"
    return read


def _emulated(group: LibraryGroup) -> tuple[str, list[str]]:
    """(the GEMM the group computes, the group's statements with that GEMM launched on `_EMU` instead):
    the library call's op and own arguments, or what the template's text says it computes (its name lists
    the ops of nodes fused into it: search.generators.gemm_template.template_op) on the views of its arguments that
    it indexes. One reading of the template serves both."""
    stmt = ast.parse(group.body[group.anchor_in_body]).body[0]
    assert isinstance(stmt, (ast.Expr, ast.Assign)) and isinstance(stmt.value, ast.Call)  # applicable() checked
    call = stmt.value
    body = list(group.body)
    if group.anchor_kind == "template":
        read = _template_gemm(group)
        if isinstance(read, str):
            raise ValueError(read)
        body[group.anchor_in_body] = read.call(call)
        return read.op, body
    call.func = ast.Attribute(value=ast.Name("_EMU", ast.Load()), attr=group.op, ctx=ast.Load())
    body[group.anchor_in_body] = ast.unparse(stmt)
    return group.op, body


def emulated_body(group: LibraryGroup) -> list[str]:
    """The group's statements with its GEMM launched on `_EMU` instead (`_emulated`)."""
    return _emulated(group)[1]


def candidate_source(group: LibraryGroup, method: str,
                     emulated: Optional[tuple[str, list[str]]] = None) -> str:
    """The candidate module for `method`; `emulated`: `_emulated(group)` where the caller has it already."""
    op, body = emulated or _emulated(group)
    header = (f"KernelOPT {NAME} candidate for {group.name}: {op} by {method} "
              f"({CONSTRUCTIONS[method]}), then the group's epilogue "
              f"({', '.join(group.epilogue) or 'none'}) unchanged.")
    preamble = (_gemm_library_source() + _EMU_CLASS +  # each method declares itself (verify.precision)
                f"\n\nKERNELOPT_PRECISION = {method!r}\n_EMU = _Emu({method!r})\n"
                "\n\ndef kernelopt_resolved_method():\n"
                "    \"\"\"The construction the last call ran (`auto` decides per shape).\"\"\"\n"
                "    return _EMU.last_method\n")
    return group_module_source(group, body, header=header, preamble=preamble,
                               extra_globals='{"_EMU": _EMU}')


class GemmFp32Generator:
    """fp32-accurate tensor-core GEMM (+ the group's epilogue) for mm/addmm/bmm/baddbmm library groups."""

    name = NAME
    #: what the registry lists (one source of truth: registry.GENERATORS reads it)
    applies_to = ("library groups anchored on extern_kernels.mm/addmm/bmm/baddbmm or on Inductor's plain "
                  "Triton mm/addmm/bmm template (fp32), with their epilogue")
    policies = ("strict", "tf32")

    def applicable(self, target: KernelTarget) -> Optional[str]:
        if not target.is_group:
            return "gemm_fp32 replaces library groups (a GEMM and its epilogue), not single Triton kernels"
        group = LibraryGroup.from_dict(target.group)
        if group.op not in GEMM_OPS:
            return f"gemm_fp32 handles {'/'.join(GEMM_OPS)} groups, not {group.op}"
        if group.reason:
            return f"the group cannot be re-stitched: {group.reason}"
        call = _anchor_call(group)
        if group.anchor_kind == "template":
            read = _template_gemm(group)
            if isinstance(read, str):
                return f"the GEMM is a Triton template Inductor chose, not a plain one: {read}"
        elif call is None or not (ast.unparse(call.func)).startswith("extern_kernels."):
            return "the group's GEMM is not an extern_kernels call"
        return self._dtype_reason(group, target)

    def _dtype_reason(self, group: LibraryGroup, target: KernelTarget) -> Optional[str]:
        """Every construction is fp32 arithmetic (TF32 hi/lo splits of fp32 words): fp32 groups only."""
        if not group.param_dtypes:
            return "the output module does not state the dtypes of the group's buffers (gemm_fp32 is for fp32 only)"
        reason = dtype_reason(self.name, target.data_dtypes())
        if reason is None:
            return None
        stated = ", ".join(f"{p} {d}" for p, d in group.param_dtypes.items())
        return f"{reason} (the group's buffers: {stated})"

    def methods(self, target: KernelTarget) -> list[str]:
        fp32 = list(FP32_CONSTRUCTIONS)
        return (list(REDUCED_CONSTRUCTIONS) + fp32) if target.precision == "tf32" else fp32

    def propose(self, target: KernelTarget, beam: list[Attempt], history: list[Attempt],
                budget: int) -> list[Candidate]:
        group = LibraryGroup.from_dict(target.group)
        tried = {a.candidate.params.get("method") for a in history}
        tried |= {c.params.get("method") for c in getattr(history, "pending", [])}
        out: list[Candidate] = []
        emulated = _emulated(group)  # read once, for every method's module
        op = emulated[0]
        for method in self.methods(target):
            if method in tried or len(out) >= budget:
                continue
            out.append(Candidate(
                target=target.name, source=candidate_source(group, method, emulated), generator=self.name,
                description=f"{op} by {method}: {CONSTRUCTIONS[method]}; epilogue unchanged",
                params={"method": method, "precision": method if method in REDUCED_CONSTRUCTIONS else "fp32-emulated",
                        "construction": CONSTRUCTIONS[method]}))
        return out
