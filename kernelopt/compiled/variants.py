"""Whole-model candidates compiled with other Inductor options: the same graph, the same math, another
of the compiler's own choices.

Inductor's max-autotune picks each convolution's kernel by timing the convolution alone, and its layout
optimization converts the activations around cuDNN's calls to channels-last whatever follows. Neither choice
is weighed on the whole model: on the H200, `layout_optimization=False` ran level2/04 (a convolution, GroupNorm
and a mean) 1.123x faster than the baseline and six other convolution models 0.64-0.89x as fast
(benchmarks/results/2026-12-04-h200-conv-inductor-variants). A variant here is a whole-model candidate: the
model compiled again under the baseline's options plus the variant's, captured in its own directory like the
baseline, then taken through Gate 2 (against the baseline module, with a side-by-side screen of both modules'
speed) and Gates 3-4 by pipeline/compile_variants.py. Gate 4 decides; the screen only spares the gates a
variant that is slower already in Gate 2's child.

Inductor states its Triton convolution templates in IEEE fp32 unless `torch.backends.cudnn.fp32_precision` is
"tf32" (torch/_inductor/kernel/conv.py), while cuDNN's convolutions run TF32 by PyTorch's default
(`cudnn.allow_tf32`, `cudnn.conv.fp32_precision` "tf32"): max-autotune weighs IEEE templates against TF32 cuDNN.
The `*_conv_templates` variants compile with that flag set, so the templates compute in the math the baseline's
convolutions ran in; they apply only where the capture recorded `cudnn.allow_tf32` on and the baseline computed
no convolution in an IEEE template of its own (its TF32 would be lower precision there), and Gate 3 judges each
convolution template as a replacement of a convolution (verify.precision.whole_graph_judged): under `strict` it
may compute in TF32 there and nowhere else. Every other variant changes no arithmetic of the baseline's calls.
"""
from __future__ import annotations

import ast
import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping, Optional

from kernelopt.compiled.decompose import KernelGraph
from kernelopt.compiled.group import CONV_OPS, ieee_convolution_templates
from kernelopt.compiled.module_parse import op_name

VARIANT_DIR = "variant-{name}"


@dataclass(frozen=True)
class CompileVariant:
    name: str
    options: Mapping[str, object]  # Inductor config patches over the baseline's (compiled.capture)
    touches: str  # one line: what it changes, for reports and `kernelopt generators`
    calls: frozenset[str]  # the library ops (op_name) of which the baseline must call one for it to matter
    devices: tuple[str, ...] = ("cuda", "cpu")  # where the option changes Inductor's code
    # compiled with cudnn.fp32_precision = "tf32": Inductor's convolution templates in TF32, as cuDNN's calls
    tf32_conv_templates: bool = False
    requires: tuple[str, ...] = ()  # math modes the capture must have recorded on (compiled.capture.library_math)
    # every convolution must be one Inductor has a template for (no ATen fallback among its backends)
    templates_only: bool = False

    @property
    def settings(self) -> dict:
        """What the variant changes: its Inductor options, and the cuDNN flag its TF32 templates are compiled under."""
        return {**self.options, **({"cudnn.fp32_precision": "tf32"} if self.tf32_conv_templates else {})}


VARIANTS: tuple[CompileVariant, ...] = (
    CompileVariant(
        "nchw_convolutions", {"layout_optimization": False},
        "convolutions on the model's own NCHW tensors (Inductor's layout_optimization off): no channels-last "
        "copies around cuDNN's calls, the epilogue kernels reading NCHW", frozenset(CONV_OPS),
        devices=("cuda", "cpu")),  # on the CPU too, Inductor converts a convolution's input to channels-last
    CompileVariant(
        "tf32_conv_templates", {},
        "Inductor's Triton convolution templates in TF32, the math cuDNN's calls ran in: its max-autotune weighs "
        "them against cuDNN on equal math, per convolution", frozenset(CONV_OPS), devices=("cuda",),
        tf32_conv_templates=True, requires=("cudnn.allow_tf32",)),
    CompileVariant(
        "fused_conv_templates", {"max_autotune_conv_backends": "TRITON"},
        "every 2-D/3-D convolution as Inductor's Triton template in TF32 (the math cuDNN's calls ran in) with its "
        "epilogue fused into it, instead of cuDNN's call and a separate epilogue kernel", frozenset(CONV_OPS),
        devices=("cuda",), tf32_conv_templates=True, requires=("cudnn.allow_tf32",), templates_only=True),
)


def templates_cover(graph: KernelGraph) -> bool:
    """Whether Inductor has a convolution template for every cuDNN convolution the module calls: its templates
    compute none dilated, transposed or with output padding (torch/_inductor/kernel/conv.py), and with only
    TRITON among the backends such a convolution would leave Inductor no choice at all."""
    def all_are(text: str, value: int) -> bool:
        return all(v == value for v in ast.literal_eval(text))

    return all(s.kwargs.get("transposed") != "True" and all_are(s.kwargs.get("dilation", "(1,)"), 1)
               and all_are(s.kwargs.get("output_padding", "(0,)"), 0)
               for s in graph.library_steps() if op_name(s.target) in CONV_OPS)


def applicable(graph: KernelGraph, device: str, modes: Mapping[str, object],
               variants: tuple[CompileVariant, ...] = VARIANTS) -> list[CompileVariant]:
    """The variants that can change the module `graph` (compiled.decompose) on `device`, whose baseline ran under
    the math `modes` the capture recorded."""
    library_ops = {op_name(s.target) for s in graph.library_steps()}
    # a convolution the baseline computed in an IEEE template must not become a TF32 one
    ieee_templates = bool(ieee_convolution_templates(graph))
    return [v for v in variants
            if v.calls & library_ops and device in v.devices and all(modes.get(m) is True for m in v.requires)
            and not (v.tf32_conv_templates and ieee_templates) and (not v.templates_only or templates_cover(graph))]


@dataclass
class VariantRequest:
    problem_path: str
    workdir: str  # the job's; the baseline's capture is there
    name: str  # a CompileVariant's
    dtype: str = "fp32"
    device: str = "cuda"
    weights: str | None = None


@dataclass
class VariantResult:
    name: str
    candidate_dir: Optional[str] = None  # the variant's capture, when it compiled to other code than the baseline
    compile_seconds: float = 0.0
    note: str = ""  # one line: what happened


def variant_by_name(name: str) -> CompileVariant:
    for v in VARIANTS:
        if v.name == name:
            return v
    raise ValueError(f"no compile variant named {name!r} (known: {', '.join(v.name for v in VARIANTS)})")


def capture_variant(req: VariantRequest) -> VariantResult:
    """The model compiled under the variant's options and captured in `<workdir>/variant-<name>/` (a child
    stage: it runs the submission). A variant whose module is the baseline's own code is no candidate."""
    from kernelopt.compiled.capture import CaptureRequest, capture_model
    from kernelopt.compiled.graph import CapturedGraph, Reproduction

    v = variant_by_name(req.name)
    out = Path(req.workdir) / VARIANT_DIR.format(name=v.name)
    with conv_templates_tf32(v.tf32_conv_templates):
        cg = capture_model(CaptureRequest(req.problem_path, str(out), req.dtype, req.device, weights=req.weights,
                                          context_timing=False, inductor_options=dict(v.options)))
    result = VariantResult(v.name, compile_seconds=cg.compile_seconds)
    baseline = Path(CapturedGraph.load(req.workdir).module_path).read_text()
    if _code(Path(cg.module_path).read_text()) == _code(baseline):
        result.note = f"{v.name}: Inductor compiled the same module as the baseline's: no candidate"
    elif cg.reproduction == Reproduction.NO.value:
        result.note = (f"{v.name}: Gate 1: the variant's module did not reproduce its own compiled output when "
                       "re-executed: no candidate")
    else:
        result.candidate_dir = str(out)
        result.note = f"{v.name}: compiled in {cg.compile_seconds:.1f} s to other code than the baseline's"
    return result


@contextlib.contextmanager
def conv_templates_tf32(on: bool) -> Iterator[None]:
    """While Inductor compiles: its convolution templates in TF32, every other math mode as it was; restored after.

    Inductor reads the templates' ALLOW_TF32 from `torch.backends.cudnn.fp32_precision`, which is PyTorch's
    ("cuda", "all") setting: cuBLAS matmuls fall back to it unless their own is set. So the matmul setting is
    pinned first to what it computes now (TF32 only where the caller allowed it): GEMMs and Inductor's GEMM
    templates keep the baseline's math, and `torch.get_float32_matmul_precision()`, which Inductor's autotune
    cache calls, does not raise on a "tf32" fallback beside the legacy "highest" (on an H100 every such compile
    failed so, 2026-12-07)."""
    if not on:
        yield
        return
    import torch

    flags = torch.backends
    before = flags.cudnn.fp32_precision, flags.cuda.matmul.fp32_precision
    flags.cuda.matmul.fp32_precision = "tf32" if flags.cuda.matmul.allow_tf32 else "ieee"
    flags.cudnn.fp32_precision = "tf32"
    try:
        yield
    finally:
        flags.cudnn.fp32_precision, flags.cuda.matmul.fp32_precision = before


def _code(source: str) -> str:
    """A module's code without its comments and blank lines (Inductor writes paths and timings in comments)."""
    lines = (ln.split("#", 1)[0].rstrip() for ln in source.splitlines())
    return "\n".join(ln for ln in lines if ln)
