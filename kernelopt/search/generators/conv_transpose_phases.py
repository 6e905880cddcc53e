"""Transposed convolutions as dense per-phase forward convolutions, for convolution library groups.

Target: a library group (compiled.group) anchored on `extern_kernels.convolution(..., transposed=True)`
(ConvTranspose1d/2d/3d, any stride, padding, output_padding, dilation, groups, any data dtype). Inductor
has no Triton template for transposed convolutions: they always run cuDNN's data-gradient kernels. The
candidate is the group's own statements with that call swapped for `ConvTransposePhases.convolution`
(kernels/conv_transpose_phases.py, embedded verbatim): one cuDNN *forward* convolution per output phase
on the re-sliced weights (views of the live parameter, taken at every call), each written into its
strided output positions. The epilogue kernels that follow run unchanged, Inductor's own.

One method, `phases` (cuDNN's heuristic algorithm per phase), in the caller's math mode, the baseline's
(`KERNELOPT_PRECISION = "library"`): every output is a sum of the same products as the transposed call's.
(Each phase's algorithm timed by cuDNN's benchmark mode ran within 3% of the heuristic's on every suite
shape, benchmarks/results/2026-12-06-h100-conv-transpose-phases: not proposed.)

Measured there on one H100: on the suite's stride-2 shapes cuDNN's own transposed call (its dgrad
kernels) is 1.3-6.8x faster than the phases; on the dilated grouped one (level1/23) the phases are
1.12x (channels-last operands) to 1.57x (NCHW) faster, in TF32, where cuDNN's own call computed
fp32-accurately (no TF32 kernel for that case): Gate 3 judges the numbers, not the flag. Gates 2-4 decide
per group.
"""
from __future__ import annotations

import inspect
from typing import Optional

from kernelopt.compiled.group import CONV_OPS, LibraryGroup, group_module_source
from kernelopt.core.precision import LIBRARY_MODE
from kernelopt.kernels import conv_transpose_phases
from kernelopt.search.generator import Attempt, Candidate, KernelTarget
from kernelopt.search.generators.conv_group import emulated_body, read_call

NAME = "conv_transpose_phases"
#: method -> (cuDNN benchmark mode per phase, one line for reports)
METHODS = {
    "phases": (False, "one cuDNN forward convolution per output phase (sub-pixel decomposition) on the "
                      "re-sliced weights, in the caller's math mode (the baseline's)"),
}

def _runtime_source() -> str:
    return inspect.getsource(conv_transpose_phases).replace("from __future__ import annotations\n", "")


def candidate_source(group: LibraryGroup, method: str) -> str:
    conv, reason = read_call(group)
    if conv is None:
        raise ValueError(f"{group.name}: {reason}")
    benchmark, construction = METHODS[method]
    header = (f"KernelOPT {NAME} candidate for {group.name}: {group.op} by {method} ({construction}), then the "
              f"group's epilogue ({', '.join(group.epilogue) or 'none'}) unchanged.")
    preamble = (_runtime_source() + f"\n\nKERNELOPT_PRECISION = {LIBRARY_MODE!r}\n"
                f"_EMU = ConvTransposePhases(benchmark={benchmark!r})\n"
                "\n\ndef kernelopt_resolved_method():\n"
                "    \"\"\"How the last call ran (how many phases, on which device).\"\"\"\n"
                "    return _EMU.last_method\n")
    return group_module_source(group, emulated_body(group, conv, into_caller=True), header=header, preamble=preamble,
                               extra_globals='{"_EMU": _EMU}')


class ConvTransposePhasesGenerator:
    """Per-phase forward convolutions for each transposed-convolution group (+ the group's epilogue, unchanged)."""

    name = NAME
    applies_to = "library groups anchored on a transposed extern_kernels.convolution, with their epilogue"
    policies = ("strict", "tf32")

    def applicable(self, target: KernelTarget) -> Optional[str]:
        if not target.is_group:
            return f"{NAME} replaces library groups (a transposed convolution and its epilogue), not single kernels"
        group = LibraryGroup.from_dict(target.group)
        if group.op not in CONV_OPS:
            return f"{NAME} handles convolution groups, not {group.op}"
        if group.anchor_kind != "library":
            return f"the convolution is a Triton template Inductor chose; {NAME} replaces cuDNN calls"
        if group.reason:
            return f"the group cannot be re-stitched: {group.reason}"
        conv, reason = read_call(group)
        if conv is None:
            return reason
        if not conv.static.get("transposed", False):
            return f"{NAME} decomposes transposed convolutions; this one is a forward convolution"
        return None

    def propose(self, target: KernelTarget, beam: list[Attempt], history: list[Attempt],
                budget: int) -> list[Candidate]:
        group = LibraryGroup.from_dict(target.group)
        tried = {a.candidate.params.get("method") for a in history}
        tried |= {c.params.get("method") for c in getattr(history, "pending", [])}
        out: list[Candidate] = []
        for method, (_, construction) in METHODS.items():
            if method in tried or len(out) >= budget:
                continue
            out.append(Candidate(target=target.name, source=candidate_source(group, method), generator=self.name,
                                 description=f"{group.op} by {method}: {construction}; epilogue unchanged",
                                 params={"method": method, "precision": LIBRARY_MODE,
                                         "construction": construction}))
        return out
