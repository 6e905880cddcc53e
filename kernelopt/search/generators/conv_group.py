"""fp32 convolutions on cuDNN for library groups.

Target: a library group (compiled.group) anchored on `extern_kernels.convolution`
(aten.convolution: Conv1d/2d/3d, transposed, grouped, strided, dilated). A
candidate is the group's own statements with the library call swapped for one
construction of kernels/conv_emulated.py (embedded verbatim, so the candidate and
the `optimized_module.py` artifact need no KernelOPT); the epilogue kernels that
follow run unchanged, Inductor's own, bound from the output module, as in
search/generators/gemm_group.py. The swapped call returns its result in the strides the
output module asserts for the library call's output (`assert_size_stride` right
after it): the epilogue kernels index it by them.

Constructions (measured on the H200 by benchmarks/conv_fp32.py, benchmarks/results/2026-12-02-h200-conv-fp32:
none was faster than the cuDNN call it replaces on any suite shape, hence opt-in in search/registry.py):

- ``split3``: 3xTF32 cuDNN convolutions, the input channels chunked so that each
  tensor-core reduction stays <= 256 long, chunks added in fp32; declared an fp32
  emulation (`KERNELOPT_PRECISION = "split3"`): under `strict`, Gate 3 admits it by
  the float64 ρ test only (verify.precision.strict_verdict);
- ``channels_last``: cuDNN's IEEE fp32 convolution (TF32 off for the call) on
  operands in channels_last; plain fp32, both policies (Conv2d/3d only);
- ``tf32``: plain TF32 cuDNN, declared reduced precision: `tf32` policy only.

PyTorch's default runs cuDNN fp32 convolutions in TF32 (`cudnn.allow_tf32` True;
compiled.capture.library_math_modes records what the baseline ran under): every
construction here sets the mode for its own calls and restores it.
"""
from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass
from typing import Optional

from kernelopt.compiled.group import CONV_OPS, LibraryGroup, group_module_source
from kernelopt.compiled.group_span import OUT_PREFIX
from kernelopt.kernels import conv_emulated
from kernelopt.search.generator import Attempt, Candidate, KernelTarget
from kernelopt.search.registry import dtype_reason

NAME = "conv_fp32"
#: construction -> one line for reports
CONSTRUCTIONS = {
    "split3": "cuDNN 3xTF32: per chunk of input channels (reduction <= 256), one TF32 convolution of "
              "[x_lo|x_hi|x_hi] with [w_hi;w_lo;w_hi] per group, chunks and bias added in fp32",
    "channels_last": "cuDNN IEEE fp32 (TF32 off) on channels_last operands, result in the module's layout",
    "tf32": "plain TF32 on cuDNN (NOT fp32-accurate: 'tf32' policy only)",
}
#: what each construction declares in KERNELOPT_PRECISION (verify.precision: split3 is an fp32 emulation)
DECLARED = {"split3": "split3", "channels_last": "fp32", "tf32": "tf32"}
#: aten.convolution's parameters after (input, weight), in order
_STATIC = ("bias", "stride", "padding", "dilation", "transposed", "output_padding", "groups")
_PARAMS = ("input", "weight") + _STATIC


@dataclass
class ConvCall:
    """The anchor statement, read: its tensors' expressions, static arguments, asserted output strides."""

    target: str  # the name the call's result is bound to
    tensors: dict  # input / weight / bias -> source expression
    static: dict  # stride, padding, ... -> literal value
    out_stride: tuple  # from assert_size_stride(target, size, stride) after the call

    @property
    def spatial(self) -> int:
        return len(self.out_stride) - 2


def read_call(group: LibraryGroup) -> tuple[Optional[ConvCall], str]:
    """The group's convolution call, or (None, why it cannot be rewritten)."""
    if not (0 <= group.anchor_in_body < len(group.body)):
        return None, "the group has no anchor statement"
    stmt = ast.parse(group.body[group.anchor_in_body]).body[0]
    call = stmt.value if isinstance(stmt, ast.Assign) else None
    if not isinstance(call, ast.Call) or not ast.unparse(call.func).startswith("extern_kernels."):
        return None, "the group's convolution is not an `x = extern_kernels.convolution(...)` call"
    assert isinstance(stmt, ast.Assign)
    if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
        return None, "the convolution's result is not bound to one name"
    if len(call.args) > len(_PARAMS) or any(isinstance(a, ast.Starred) for a in call.args):
        return None, "the convolution call has more positional arguments than aten.convolution"
    given = dict(zip(_PARAMS, call.args, strict=False))  # the leading parameters given by position
    for kw in call.keywords:
        if kw.arg not in _PARAMS or kw.arg in given:
            return None, f"unsupported convolution argument {kw.arg or '**kwargs'!r}"
        given[kw.arg] = kw.value
    if "input" not in given or "weight" not in given:
        return None, "the convolution call lacks its input or weight"
    tensors = {k: ast.unparse(given[k]) for k in ("input", "weight")}
    static: dict = {}
    bias = given.get("bias")
    if bias is not None and not (isinstance(bias, ast.Constant) and bias.value is None):
        tensors["bias"] = ast.unparse(bias)
    for k in _STATIC[1:]:
        if k in given:
            try:
                static[k] = ast.literal_eval(given[k])
            except (ValueError, TypeError, SyntaxError):
                return None, f"the convolution's {k} is not a literal ({ast.unparse(given[k])})"
    target = stmt.targets[0].id
    out_stride = _asserted_stride(group, target)
    if out_stride is None:
        return None, (f"the output module asserts no strides for the convolution's output {target} "
                      "(the epilogue kernels index it by them)")
    conv = ConvCall(target, tensors, static, out_stride)
    if not 1 <= conv.spatial <= 3:
        return None, f"a convolution over {conv.spatial} spatial dims (Conv1d/2d/3d are handled)"
    for k in ("stride", "padding", "dilation", "output_padding"):
        v = static.get(k)
        if isinstance(v, (tuple, list)) and len(v) not in (1, conv.spatial):
            return None, f"the convolution's {k} {v} does not match its {conv.spatial} spatial dims"
        if not (v is None or isinstance(v, int) or isinstance(v, (tuple, list)) and all(isinstance(i, int) for i in v)):
            return None, f"the convolution's {k} {v!r} is not integers"
    if not isinstance(static.get("groups", 1), int) or not isinstance(static.get("transposed", False), bool):
        return None, "the convolution's groups/transposed are not an int/bool"
    return conv, ""


def _asserted_stride(group: LibraryGroup, target: str) -> Optional[tuple]:
    for text in group.body[group.anchor_in_body + 1:]:
        stmt = ast.parse(text).body[0]
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if (isinstance(call, ast.Call) and ast.unparse(call.func).endswith("assert_size_stride")
                and len(call.args) >= 3 and ast.unparse(call.args[0]) == target):
            try:
                return tuple(ast.literal_eval(call.args[2]))
            except (ValueError, TypeError, SyntaxError):
                return None
    return None


def caller_buffer(group: LibraryGroup, conv: ConvCall) -> Optional[str]:
    """The name under which the group holds the caller's buffer for the convolution's result, where the caller
    allocates it (an epilogue that writes in place: compiled/group_span.OUT_PREFIX), else None."""
    name = f"{OUT_PREFIX}{conv.target}"
    return name if group.anchor_in_body > 0 and group.body[group.anchor_in_body - 1] == f"{name} = {conv.target}" \
        else None


def emulated_body(group: LibraryGroup, conv: ConvCall, into_caller: bool = False) -> list[str]:
    """The group's statements with its convolution launched on `_EMU`, returning the asserted strides; given
    `into_caller`, writing straight into the caller's buffer where the group has one (its copy is then a no-op)."""
    stmt = ast.parse(group.body[group.anchor_in_body]).body[0]
    assert isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call)
    call = stmt.value
    call.func = ast.Attribute(value=ast.Name("_EMU", ast.Load()), attr="convolution", ctx=ast.Load())
    call.keywords.append(ast.keyword(arg="out_stride", value=ast.parse(repr(tuple(conv.out_stride)), mode="eval").body))
    out = caller_buffer(group, conv) if into_caller else None
    if out is not None:
        call.keywords.append(ast.keyword(arg="out", value=ast.Name(out, ast.Load())))
    body = list(group.body)
    body[group.anchor_in_body] = ast.unparse(stmt)
    return body


def _conv_library_source() -> str:
    return inspect.getsource(conv_emulated).replace("from __future__ import annotations\n", "")


def candidate_source(group: LibraryGroup, method: str, chunk: Optional[int] = None) -> str:
    conv, reason = read_call(group)
    if conv is None:
        raise ValueError(f"{group.name}: {reason}")
    header = (f"KernelOPT {NAME} candidate for {group.name}: {group.op} by {method} "
              f"({CONSTRUCTIONS[method]}), then the group's epilogue "
              f"({', '.join(group.epilogue) or 'none'}) unchanged.")
    chunk_arg = f", chunk={int(chunk)}" if chunk is not None else ""
    preamble = (_conv_library_source() +
                f"\n\nKERNELOPT_PRECISION = {DECLARED[method]!r}\n_EMU = ConvEmu({method!r}{chunk_arg})\n"
                "\n\ndef kernelopt_resolved_method():\n"
                "    \"\"\"The construction the last call ran (split3: its channel chunks).\"\"\"\n"
                "    return _EMU.last_method\n")
    return group_module_source(group, emulated_body(group, conv), header=header, preamble=preamble,
                               extra_globals='{"_EMU": _EMU}')


class ConvFp32Generator:
    """fp32 cuDNN convolution constructions (+ the group's epilogue) for convolution library groups."""

    name = NAME
    applies_to = "library groups anchored on extern_kernels.convolution (fp32), with their epilogue"
    policies = ("strict", "tf32")

    def applicable(self, target: KernelTarget) -> Optional[str]:
        if not target.is_group:
            return f"{NAME} replaces library groups (a convolution and its epilogue), not single Triton kernels"
        group = LibraryGroup.from_dict(target.group)
        if group.op not in CONV_OPS:
            return f"{NAME} handles convolution groups, not {group.op}"
        if group.anchor_kind != "library":
            return f"the convolution is a Triton template Inductor chose; {NAME} replaces library calls"
        if group.reason:
            return f"the group cannot be re-stitched: {group.reason}"
        conv, reason = read_call(group)
        if conv is None:
            return reason
        return self._dtype_reason(group, target)

    def _dtype_reason(self, group: LibraryGroup, target: KernelTarget) -> Optional[str]:
        """The split is of fp32 words (TF32 hi/lo), and fp32 dispatch is for fp32 data: fp32 groups only."""
        if not group.param_dtypes:
            return f"the output module does not state the dtypes of the group's buffers ({NAME} is for fp32 only)"
        reason = dtype_reason(self.name, target.data_dtypes())
        if reason is None:
            return None
        stated = ", ".join(f"{p} {d}" for p, d in group.param_dtypes.items())
        return f"{reason} (the group's buffers: {stated})"

    def methods(self, target: KernelTarget) -> list[str]:
        conv, _ = read_call(LibraryGroup.from_dict(target.group))
        fp32 = ["split3"] + (["channels_last"] if conv is not None and conv.spatial >= 2 else [])
        return (["tf32"] + fp32) if target.precision == "tf32" else fp32

    def propose(self, target: KernelTarget, beam: list[Attempt], history: list[Attempt],
                budget: int) -> list[Candidate]:
        group = LibraryGroup.from_dict(target.group)
        tried = {a.candidate.params.get("method") for a in history}
        tried |= {c.params.get("method") for c in getattr(history, "pending", [])}
        out: list[Candidate] = []
        for method in self.methods(target):
            if method in tried or len(out) >= budget:
                continue
            precision = {"split3": "fp32-emulated", "channels_last": "fp32", "tf32": "tf32"}[method]
            out.append(Candidate(
                target=target.name, source=candidate_source(group, method), generator=self.name,
                description=f"{group.op} by {method}: {CONSTRUCTIONS[method]}; epilogue unchanged",
                params={"method": method, "precision": precision, "construction": CONSTRUCTIONS[method]}))
        return out
