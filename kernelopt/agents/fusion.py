"""The fusion agent, generator `llm_fusion` (docs/agents.md): one fused module for a kernel chain.

Target: a kernel chain (compiled.group.kernel_chains: adjacent Triton kernels of Inductor's output
module joined by intermediate buffers that nothing outside the chain reads). Inductor launches one
kernel per fusion it could not merge (a reduction feeding a pointwise pass, a two-pass norm); the
intermediates make a round trip through global memory. The agent is asked for one module that
computes the whole chain, keeping the intermediates in registers or shared memory.

A chain is launched, gated and re-stitched exactly as a library group is (the same
`run(*params, stream=None)` interface over its external buffers, the same reference of Inductor's
own statements for Gate 2), so everything after the request is the codegen agent's
(agents/codegen.py): the conversation loop, the STRATEGY line filing each attempt for the memory and
the team's AVOID list, the refusal of a module that does not declare `KERNELOPT_PRECISION`. This
agent differs in what it applies to and in its first request's prompt files and chain description
(prompts/fusion_*.md, `_task_values`).
"""
from __future__ import annotations

from typing import Optional

from kernelopt.agents.codegen import CodegenGenerator
from kernelopt.compiled.group import CHAIN_OP, LibraryGroup
from kernelopt.search.generator import KernelTarget

NAME = "llm_fusion"


def chain_description(group: LibraryGroup) -> str:
    """The chain in launch order, what travels between its kernels, and Inductor's ATen comments."""
    lines = [f"- in launch order: {', '.join(f'`{k}`' for k in group.kernels)}"]
    if group.dropped:
        lines.append(f"- intermediates written and read only inside the chain (a fused kernel need not write "
                     f"them): {', '.join(f'`{b}`' for b in group.dropped)}")
    lines += [f"- {note.lstrip('# ')}" for note in group.notes]
    return "\n".join(lines)


class FusionGenerator(CodegenGenerator):
    """The fusion agent on kernel chains, in the codegen agent's conversation loop."""

    name = NAME
    agent = "fusion"
    system_prompt, task_prompt, baseline_label = "fusion_system", "fusion_task", "Inductor's chain"

    def applicable(self, target: KernelTarget) -> Optional[str]:
        reason = self.settings.unconfigured()
        if reason:
            return reason
        if not target.is_group or target.group.get("op") != CHAIN_OP:
            return (f"{NAME} fuses kernel chains (adjacent Triton kernels joined by intermediates); single "
                    "kernels go to `llm`, library groups to `llm_codegen`")
        group = LibraryGroup.from_dict(target.group)
        if group.reason:
            return f"the chain cannot be re-stitched: {group.reason}"
        return None

    def _task_values(self, group: LibraryGroup) -> dict[str, str]:
        """The chain in launch order and its intermediates (the rest of the request is the codegen agent's)."""
        return {"n": str(len(group.kernels)), "chain": chain_description(group)}
