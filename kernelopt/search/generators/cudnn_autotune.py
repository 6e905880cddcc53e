"""cuDNN's algorithm timed per shape, for convolution library groups.

Target: a library group (compiled.group) anchored on `extern_kernels.convolution`
(Conv1d/2d/3d, transposed, grouped, strided, dilated; any data dtype). The candidate is
the group's own statements with the library call swapped for `ConvAutotuned.convolution`
(kernels/cudnn_autotuned.py, embedded verbatim so the candidate and the deployed
`optimized_module.py` need no KernelOPT): the same cuDNN convolution on the same
operands, the algorithm chosen by cuDNN's benchmark mode over all of its algorithms
instead of its heuristic's pick. The epilogue kernels that follow run unchanged,
Inductor's own; the result comes back in the strides the output module asserts.

Precision: the call runs under the caller's math mode, the one the baseline's
convolution ran under (`cudnn.allow_tf32`, recorded at capture), so it declares
`KERNELOPT_PRECISION = "library"` (verify.precision.LIBRARY_MODE): admitted under
`strict` like the compiler's own call it replaces, and the report states what that mode
computed in (TF32 by PyTorch's default) for baseline and replacement alike.
"""
from __future__ import annotations

import inspect
from typing import Optional

from kernelopt.compiled.group import CONV_OPS, LibraryGroup, group_module_source
from kernelopt.core.precision import LIBRARY_MODE
from kernelopt.kernels import cudnn_autotuned
from kernelopt.search.generator import Attempt, Candidate, KernelTarget
from kernelopt.search.generators.conv_group import emulated_body, read_call

NAME = "cudnn_autotune"
METHOD = "cudnn-benchmark"
CONSTRUCTION = ("the same cuDNN convolution with its algorithm timed per shape (benchmark mode, every "
                "algorithm) instead of cuDNN's heuristic pick, in the caller's math mode (the baseline's)")


def _runtime_source() -> str:
    return inspect.getsource(cudnn_autotuned).replace("from __future__ import annotations\n", "")


def candidate_source(group: LibraryGroup) -> str:
    conv, reason = read_call(group)
    if conv is None:
        raise ValueError(f"{group.name}: {reason}")
    header = (f"KernelOPT {NAME} candidate for {group.name}: {group.op} by {METHOD} ({CONSTRUCTION}), then the "
              f"group's epilogue ({', '.join(group.epilogue) or 'none'}) unchanged.")
    preamble = (_runtime_source() + f"\n\nKERNELOPT_PRECISION = {LIBRARY_MODE!r}\n_EMU = ConvAutotuned()\n"
                "\n\ndef kernelopt_resolved_method():\n"
                "    \"\"\"How the last call ran (cuDNN benchmark mode on a GPU).\"\"\"\n"
                "    return _EMU.last_method\n")
    return group_module_source(group, emulated_body(group, conv), header=header, preamble=preamble,
                               extra_globals='{"_EMU": _EMU}')


class CudnnAutotuneGenerator:
    """cuDNN's fastest algorithm for each convolution group's shape (+ the group's epilogue, unchanged)."""

    name = NAME
    applies_to = "library groups anchored on extern_kernels.convolution, with their epilogue"
    policies = ("strict", "tf32")

    def applicable(self, target: KernelTarget) -> Optional[str]:
        if not target.is_group:
            return f"{NAME} replaces library groups (a convolution and its epilogue), not single Triton kernels"
        group = LibraryGroup.from_dict(target.group)
        if group.op not in CONV_OPS:
            return f"{NAME} handles convolution groups, not {group.op}"
        if group.anchor_kind != "library":
            return f"the convolution is a Triton template Inductor chose; {NAME} replaces cuDNN calls"
        if group.reason:
            return f"the group cannot be re-stitched: {group.reason}"
        _, reason = read_call(group)
        return reason or None

    def propose(self, target: KernelTarget, beam: list[Attempt], history: list[Attempt],
                budget: int) -> list[Candidate]:
        tried = {a.candidate.params.get("method") for a in history}
        tried |= {c.params.get("method") for c in getattr(history, "pending", [])}
        if METHOD in tried or budget < 1:
            return []
        group = LibraryGroup.from_dict(target.group)
        return [Candidate(target=target.name, source=candidate_source(group), generator=self.name,
                          description=f"{group.op} by {METHOD}: {CONSTRUCTION}; epilogue unchanged",
                          params={"method": METHOD, "precision": LIBRARY_MODE, "construction": CONSTRUCTION})]
