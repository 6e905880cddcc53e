"""Candidate generators by name: the job's `generators` option picks from here.

One table, `GENERATORS`, says what each generator touches, under which
precision policies it may propose, and for which data dtypes its candidates
are made: the search asks `applicable(generator, target)` here for every
generator the job names (the declared dtypes first, then the generator's own
test; nothing else routes targets to generators), and `kernelopt generators`
prints this table.
"""
from __future__ import annotations

import importlib
from dataclasses import asdict, dataclass
from typing import Iterable, Optional

from kernelopt.compiled.group import CHAIN_OP
from kernelopt.core.tolerance import DTYPES, Dtype
from kernelopt.search.generator import CandidateGenerator, KernelTarget


@dataclass(frozen=True)
class GeneratorSpec:
    name: str
    factory: str  # "module:Class"
    # "kernel" (one of Inductor's Triton kernels), "group" (a library group, compiled.group),
    # "chain" (a kernel chain: adjacent Triton kernels joined by intermediates, compiled.group.kernel_chains),
    # "kernel-file" (a whole single-kernel problem file, pipeline/kernel_job.py),
    # "graph" (the model's whole ATen graph before compilation: pipeline/graph_rewrite.py runs it, not the search)
    targets: tuple[str, ...]
    touches: str  # one line: what it may replace
    policies: tuple[str, ...]  # precision policies under which it proposes candidates
    # the data dtypes (core.tolerance.Dtype values) its candidates are made for; a target computing
    # in any other dtype (the job's, or a group's buffers') is declined with the reason
    dtypes: tuple[str, ...] = DTYPES
    # for "kernel" targets: the Inductor kernel kinds (compiled.module_parse: pointwise | reduction |
    # persistent | template) it rewrites; the strategy skips a kernel no generator of the job declares
    kernel_kinds: tuple[str, ...] = ()
    default: bool = True  # in the job's default generator list
    llm: bool = False  # an agent: it calls the job's LLM endpoint (the worker hands its settings over)

    def to_dict(self) -> dict:
        return asdict(self)


# Inductor's heuristic-launched kernels (a Triton template is a library group's anchor instead:
# its GEMM/convolution is rewritten through the group)
TRITON_HEURISTIC_KINDS = ("pointwise", "reduction", "persistent")

GENERATORS: dict[str, GeneratorSpec] = {s.name: s for s in (
    GeneratorSpec("graph_rewrite", "kernelopt.rewrite.catalogue:CATALOGUE", ("graph",),
                  "the model's ATen graph before compilation: exact identities of the catalogue "
                  "(kernelopt/rewrite/catalogue.py: a linear map of a GEMM's output rows applied to its weights "
                  "— sums, means, average pools over features; sums/means of a convolution over spatial dims "
                  "from window sums of its input; sums/means over its output channels as one output channel with the "
                  "taps summed; an average pool composed into the convolution or transposed convolution before it; "
                  "diag(v) operands as scalings; reductions over size-1 dims), the rewritten graph compiled by "
                  "Inductor as one whole-model candidate", ("strict", "tf32")),
    GeneratorSpec("compile_variants", "kernelopt.compiled.variants:VARIANTS", ("graph",),
                  "the whole model compiled again by Inductor with one of its options changed, where the module "
                  "calls what the option changes (kernelopt/compiled/variants.py: convolutions on NCHW tensors; "
                  "Inductor's convolution templates in the TF32 cuDNN's calls ran in, autotuned against cuDNN or "
                  "with their epilogues fused); each a whole-model candidate screened in Gate 2, then Gates 3-4",
                  ("strict", "tf32")),
    GeneratorSpec("launch_config", "kernelopt.search.generators.launch_config:LaunchConfigGenerator", ("kernel", "kernel-file"),
                  "Inductor's pointwise/reduction Triton kernels: other launch configs (block sizes, warps, "
                  "stages), the jit function unchanged; in a kernel file, the launcher's block-size/warps/stages "
                  "literals (search.generators.kernel_file_config)", ("strict", "tf32"),
                  kernel_kinds=TRITON_HEURISTIC_KINDS),
    GeneratorSpec("gemm_fp32", "kernelopt.search.generators.gemm_group:GemmFp32Generator", ("group",),
                  "library groups extern_kernels.mm/addmm/bmm/baddbmm (or Inductor's plain Triton mm/addmm/bmm "
                  "template) + epilogue: fp32-accurate tensor-core GEMM "
                  "(presplit 3xTF32 / bf16x6 split-K / cuBLAS 3xTF32 per shape), bias fused, epilogue unchanged; "
                  "plain TF32 and bf16x3 too under 'tf32'", ("strict", "tf32"),
                  # its constructions split fp32 words by bit masks (TF32 hi/lo) and emulate fp32
                  # accuracy: bf16/fp16 GEMMs already run on tensor cores in cuBLAS
                  dtypes=(Dtype.FP32.value,)),
    GeneratorSpec("conv_fp32", "kernelopt.search.generators.conv_group:ConvFp32Generator", ("group",),
                  "library groups extern_kernels.convolution + epilogue (Conv1d/2d/3d, transposed, grouped, "
                  "strided, dilated): cuDNN 3xTF32 in channel chunks (fp32 emulation) / IEEE fp32 on "
                  "channels_last operands, epilogue unchanged; plain TF32 too under 'tf32'", ("strict", "tf32"),
                  # the split is of fp32 words by bit masks (TF32 hi/lo); bf16/fp16 convolutions already
                  # run on tensor cores in cuDNN
                  dtypes=(Dtype.FP32.value,),
                  # opt-in: on the H200 every construction was slower than the cuDNN call it replaces, on all
                  # ten suite shapes (benchmarks/results/2026-12-02-h200-conv-fp32): the baseline's cuDNN runs
                  # TF32 by PyTorch's default (cudnn.allow_tf32, read at capture), 3xTF32 does three times that
                  default=False),
    GeneratorSpec("cudnn_autotune", "kernelopt.search.generators.cudnn_autotune:CudnnAutotuneGenerator", ("group",),
                  "library groups extern_kernels.convolution + epilogue (Conv1d/2d/3d, transposed, grouped): the "
                  "same cuDNN call with its algorithm timed per shape (benchmark mode, all algorithms) instead "
                  "of the heuristic's pick, in the caller's math mode (the baseline's: TF32 by PyTorch's "
                  "default, stated in the report); epilogue unchanged", ("strict", "tf32"),
                  # opt-in: on an H100 (the H200 was not lent), cuDNN's benchmark pick ran as fast as its
                  # heuristic's on all 19 suite shapes (within 1%), and the candidate 0.998-1.001x of the group
                  # on level2/03-11 (benchmarks/results/2026-12-05-h100-conv-autotune): a search with nothing to win
                  default=False),
    GeneratorSpec("conv_transpose_phases",
                  "kernelopt.search.generators.conv_transpose_phases:ConvTransposePhasesGenerator", ("group",),
                  "library groups on a transposed extern_kernels.convolution + epilogue (ConvTranspose1d/2d/3d, "
                  "stride, padding, output_padding, dilation, groups): one cuDNN forward convolution per output "
                  "phase on the re-sliced live weights (sub-pixel decomposition; heuristic or timed algorithm), "
                  "in the caller's math mode; epilogue unchanged", ("strict", "tf32")),
    GeneratorSpec("helion_config", "kernelopt.search.generators.helion_config:HelionConfigGenerator",
                  ("kernel-file",),
                  "a Helion kernel file's @helion.kernel decorators pinned to other points of Helion's own "
                  "configuration space (block sizes, loop orders, indexing, pid type, warps, stages, ...): its "
                  "default config, pattern-search neighbours of the best so far, random points; the kernel's "
                  "code unchanged", ("strict", "tf32")),
    GeneratorSpec("llm", "kernelopt.agents.generator:LLMGenerator", ("kernel", "kernel-file"),
                  "the executor agent over an OpenAI-compatible endpoint (KERNELOPT_LLM_*): any rewrite of the "
                  "Triton kernel (or kernel file) keeping its interface; only when an endpoint is configured",
                  ("strict", "tf32"), kernel_kinds=TRITON_HEURISTIC_KINDS, default=False, llm=True),
    GeneratorSpec("llm_codegen", "kernelopt.agents.codegen:CodegenGenerator", ("group",),
                  "the codegen agent over an OpenAI-compatible endpoint (KERNELOPT_LLM_*): a new module for a "
                  "library group (its library call and epilogue) written from the group's ATen graph, declaring "
                  "its precision; only when an endpoint is configured", ("strict", "tf32"), default=False,
                  llm=True),
    GeneratorSpec("llm_fusion", "kernelopt.agents.fusion:FusionGenerator", ("chain",),
                  "the fusion agent over an OpenAI-compatible endpoint (KERNELOPT_LLM_*): one fused module for a "
                  "kernel chain (adjacent Triton kernels joined by intermediates), the intermediates kept on "
                  "chip; only when an endpoint is configured", ("strict", "tf32"), default=False, llm=True),
)}
# A kernel file has no Inductor kernels: a generator named for "kernel" may have a
# kernel-file counterpart, used when the job's problem is a kernel file.
KERNEL_FILE_FACTORIES: dict[str, str] = {"launch_config": "kernelopt.search.generators.kernel_file_config:KernelFileConfigGenerator"}


def searches_model_targets(name: str) -> bool:
    """Whether generator `name` works on any of a model's targets (kernels, library groups, kernel chains): not
    the whole-graph rewrites (their own stage) nor a generator made for kernel files only (helion_config)."""
    spec = GENERATORS.get(name)
    return spec is None or bool({"kernel", "group", "chain"} & set(spec.targets))


def make_generator(name: str) -> CandidateGenerator:
    spec = GENERATORS.get(name)
    if spec is None:
        raise ValueError(f"unknown generator {name!r}; available: {', '.join(available())}")
    if not searches_model_targets(name):
        raise ValueError(f"{name} is not a search generator of model targets: it runs as a whole-model stage before "
                         "the search (graph rewrites, compile variants), or on kernel files only "
                         "(make_kernel_file_generator)")
    module, cls = spec.factory.split(":")
    return getattr(importlib.import_module(module), cls)()


def make_kernel_file_generator(name: str) -> CandidateGenerator | None:
    """The generator `name` for a kernel-file problem, or None when it does not apply to kernel files."""
    spec = GENERATORS.get(name)
    if spec is None:
        raise ValueError(f"unknown generator {name!r}; available: {', '.join(available())}")
    if "kernel-file" not in spec.targets:
        return None
    module, cls = KERNEL_FILE_FACTORIES.get(name, spec.factory).split(":")
    return getattr(importlib.import_module(module), cls)()


def dtype_reason(name: str, dtypes: Iterable[str]) -> Optional[str]:
    """Why generator `name` declines data in `dtypes` (None when it declares them all, or is not listed)."""
    spec = GENERATORS.get(name)
    other = sorted(set(dtypes) - set(spec.dtypes)) if spec is not None else []
    if spec is None or not other:
        return None
    return f"{name} is made for {'/'.join(spec.dtypes)} data only; this target computes in {', '.join(other)}"


def applicable(gen: CandidateGenerator, target: KernelTarget) -> Optional[str]:
    """None if `gen` may work on `target`, else why not: its declared dtypes, then its own test.

    A generator not in the table (a test's) is asked its own test only.
    """
    return dtype_reason(gen.name, target.data_dtypes()) or gen.applicable(target)


def uses_llm(names: Iterable[str]) -> bool:
    """Whether any of the named generators is an agent (needs the LLM settings and the team's AVOID list)."""
    return any(GENERATORS[n].llm for n in names if n in GENERATORS)


def kernel_kind_reason(names: Iterable[str], kind: str) -> Optional[str]:
    """Why none of the generators `names` can work on an Inductor kernel of `kind` (None when one declares it)."""
    names = list(names)
    specs = [GENERATORS[n] for n in names if n in GENERATORS]
    if any(kind in s.kernel_kinds for s in specs) or len(specs) < len(names):  # a test's generator: its own test
        return None
    declared = sorted({k for s in specs for k in s.kernel_kinds})
    rewrites = f" (they rewrite {'/'.join(declared)} kernels)" if declared else " (none rewrites single kernels)"
    return f"no generator of this job handles {kind} kernels: {', '.join(names) or 'none named'}{rewrites}"


def target_kind_reason(names: Iterable[str], target_kind: str) -> Optional[str]:
    """Why none of the generators `names` works on targets of `target_kind` (GeneratorSpec.targets), or None.
    A generator not in the table (a test's) is assumed to (its own `applicable` decides)."""
    names = list(names)
    if any(n not in GENERATORS or target_kind in GENERATORS[n].targets for n in names):
        return None
    makers = [s.name for s in GENERATORS.values() if target_kind in s.targets]
    return (f"no generator of this job works on {target_kind} targets: {', '.join(names) or 'none named'}"
            + (f" ({', '.join(makers)} does)" if makers else ""))


def outside_job_hint(target: KernelTarget, names: Iterable[str]) -> Optional[str]:
    """For a target no generator of the job applies to: the registered generators outside the job that
    would, as one clause of its cause (None when there are none).

    A built-in generator is asked its own `applicable`; an agent is named by what it targets alone (its
    `applicable` first asks for an LLM endpoint, which a job without agents need not have).
    """
    job = set(names)
    kind = ("chain" if (target.group or {}).get("op") == CHAIN_OP else "group") if target.is_group else "kernel"
    found = []
    for spec in GENERATORS.values():
        if spec.name in job or kind not in spec.targets:
            continue
        if spec.llm:
            found.append(f"{spec.name} (an agent: needs an LLM endpoint)")
        elif applicable(make_generator(spec.name), target) is None:
            found.append(spec.name + ("" if spec.default else " (opt-in)"))
    if not found:
        return None
    return f"not in this job but would apply: {', '.join(found)} (name it with --generators)"


def available() -> list[str]:
    return list(GENERATORS)


def default_generators() -> list[str]:
    return [s.name for s in GENERATORS.values() if s.default]


def describe() -> list[dict]:
    """One entry per generator: name, targets, what it touches, policies, dtypes."""
    return [s.to_dict() for s in GENERATORS.values()]
