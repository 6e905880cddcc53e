"""The codegen agent, generator `llm_codegen` (docs/agents.md): a new implementation of a library group,
written by the LLM from the group's ATen graph.

Target: a library group (compiled.group.LibraryGroup: a vendor-library GEMM or convolution
and the kernels Inductor fused after it). The first request of a conversation states what
the module says about the group — the library call with its arguments, Inductor's
"Original ATen" comments, each kernel's definition (its graph fragment, then its Triton or
C++ source) — the interface (`run(*params, stream=None)` over the group's external buffers,
each with its role, shape, stride and dtype), Inductor's own statements (the reference Gate
2 compares against), the job's precision policy as Gate 3 applies it, the profile figures
the target carries, and the experience memory and AVOID list the planner reads
(agents/planner.py builds that text; no second copy here).

The reply's one python block is the candidate module. It must declare its arithmetic in
`KERNELOPT_PRECISION`, as gemm_fp32's candidates do: under `strict` Gate 3 rejects a
declared reduced precision and puts a declared fp32 emulation through the float64 ρ test
(verify.precision.strict_verdict). A module without the declaration is refused before the
gates (gate `extract`, its reason fed back). The conversation loop — Gate 1-2 feedback into
the same conversation up to K retries, a fresh one after that, transcripts, duplicates — is
LLMGenerator's (agents/generator.py); this agent differs in the first request, in the
message after a passing candidate (no planner call: the reply's own STRATEGY line files it
for the memory and the team's AVOID list), and in that refusal.
"""
from __future__ import annotations

import ast
import dataclasses
from typing import Optional

from kernelopt.agents.generator import Conversation, LLMGenerator, _timing
from kernelopt.agents.planner import STRATEGIES, Plan, avoid_context, parse_plan, profile_context
from kernelopt.agents.templates import prompt
from kernelopt.compiled.group import CHAIN_OP, LibraryGroup, run_function_source
from kernelopt.core.precision import FP32_EMULATIONS, declared_precision
from kernelopt.search.generator import Attempt, KernelTarget

NAME = "llm_codegen"
#: the fp32 emulations offered to the LLM: Gate 3's FP32_EMULATIONS without gemm_fp32's construction names
OFFERED_EMULATIONS = ("tf32x3", "bf16x6")
assert set(OFFERED_EMULATIONS) <= FP32_EMULATIONS
_ROLE_TEXT = {"in_ptr": "input: read only", "out_ptr": "output: written in place (its contents on entry are garbage)",
              "in_out_ptr": "input and output: read, then overwritten in place"}


def interface(group: LibraryGroup) -> str:
    """`run`'s signature and, per parameter, its role, shape, stride and dtype as the module states them."""
    lines = [f"A standalone Python module defining `run({', '.join(group.params + ['stream=None'])})`, called with "
             "the group's external buffers in this order (torch tensors on the model's device):", ""]
    for param, role in zip(group.params, group.arg_names, strict=False):
        kind = role.rstrip("0123456789")
        shape = group.param_shapes.get(param)
        layout = f"shape {list(shape[0])}, stride {list(shape[1])}" if shape else "shape not stated"
        lines.append(f"- `{param}` ({role}, {_ROLE_TEXT.get(kind, kind)}): {group.param_dtypes.get(param, '?')}, "
                     f"{layout}")
    lines += ["", "It writes every output in place (the caller allocated them; keep their shapes, dtypes and "
              "strides), leaves the inputs untouched and returns nothing. `stream` may be ignored (launch on "
              "torch's current stream)."]
    if group.dropped:
        lines.append(f"Inductor's intermediates {', '.join(group.dropped)} are not part of the interface: "
                     "allocate what you need, or keep it on chip.")
    return "\n".join(lines)


def aten_description(group: LibraryGroup) -> str:
    """What the group computes, in the module's own words: the library call and Inductor's ATen comments."""
    call = group.body[group.anchor_in_body] if 0 <= group.anchor_in_body < len(group.body) else group.anchor_target
    lines = [f"- the library call ({group.anchor_kind} `{group.anchor_target}`, aten `{group.op}`): `{call}`"]
    if group.epilogue:
        lines.append(f"- then, in launch order: {', '.join(f'`{k}`' for k in group.epilogue)}")
    lines += [f"- {note.lstrip('# ')}" for note in group.notes]
    return "\n".join(lines)


def kernel_text(group: LibraryGroup) -> str:
    """Each kernel's definition (Inductor's comment block with its graph fragment, then the source)."""
    parts = []
    for name, source in group.kernel_sources.items():
        lang = "python" if "@triton.jit" in source else "cpp"
        parts.append(f"### `{name}`\n\n```{lang}\n{source}\n```")
    return "\n\n".join(parts) or "No kernel definitions: the group is the library call alone."


def precision_rules(target: KernelTarget) -> str:
    """The job's precision policy as Gate 3 applies it (verify.precision, verify.stitched_model)."""
    if "fp32" not in target.data_dtypes():
        return (f"The data is {'/'.join(sorted(target.data_dtypes()))}: compute in it or better, accumulate "
                'reductions and dot products in fp32. Declare `KERNELOPT_PRECISION = "fp32"` when the arithmetic '
                "is at least as precise as the data.")
    emulations = " or ".join(f'"{e}"' for e in OFFERED_EMULATIONS)
    if target.precision == "tf32":
        return ('TF32 tensor-core arithmetic is allowed on fp32 data (declare `KERNELOPT_PRECISION = "tf32"`); the '
                "model's outputs must then stay within max(5e-3, 1e-3 * max|output|) of PyTorch's. Full fp32 "
                f'(`"fp32"`) and fp32 emulations ({emulations}) are allowed too. fp16/bf16 arithmetic on fp32 '
                "data is not.")
    return ("fp32 data must be computed in fp32, or in a declared fp32 emulation with fp32 accumulation:\n\n"
            '- full fp32: declare `KERNELOPT_PRECISION = "fp32"`; in Triton, `tl.dot(..., input_precision="ieee")` '
            "(tl.dot's default on fp32 inputs is TF32);\n"
            f"- an fp32 emulation on tensor cores: declare `KERNELOPT_PRECISION = {emulations}` (3xTF32: "
            "hi/lo TF32 splits, three products; bf16x6: three bf16 parts, six products), accumulating in fp32. "
            "Such a module must also pass a float64 error test: its error against float64 may be at most "
            "a few times fp32's own.\n\n"
            "Rejected whatever the error: plain TF32 (tl.dot's default, allow_tf32, "
            "torch.backends.cuda.matmul.allow_tf32, set_float32_matmul_precision('high')), bf16x3, and any "
            "fp16/bf16/fp8 cast or arithmetic on the data.")


class CodegenGenerator(LLMGenerator):
    """The codegen agent on library groups, in LLMGenerator's conversation loop."""

    name = NAME
    agent = "codegen"
    # the first request: prompt files, and what the baseline is called beside the best module's time
    system_prompt, task_prompt, baseline_label = "codegen_system", "codegen_task", "Inductor's"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._plans = 0

    def applicable(self, target: KernelTarget) -> Optional[str]:
        reason = self.settings.unconfigured()
        if reason:
            return reason
        if not target.is_group:
            return (f"{NAME} writes library groups (a library call and its epilogue); Triton kernels and kernel "
                    "files go to `llm`")
        group = LibraryGroup.from_dict(target.group)
        if group.op == CHAIN_OP:
            return f"{NAME} writes library groups; kernel chains go to the fusion agent (`llm_fusion`)"
        if group.reason:
            return f"the group cannot be re-stitched: {group.reason}"
        return None

    def _new_plan(self, target: KernelTarget, chain: int) -> Plan:
        """A plan id for the attempts of one request (the reply's STRATEGY line fills it in, `_replied`)."""
        self._plans += 1
        return Plan(f"{target.name}:{chain}:codegen{self._plans}", "other", "(no STRATEGY line yet)", 0)

    def _start(self, target: KernelTarget, beam: list[Attempt], history: list[Attempt], chain: int,
               diversify: bool) -> Conversation:
        group = LibraryGroup.from_dict(target.group)
        # A fresh conversation after K failed retries starts from this agent's best module so far, if any
        # (another generator's candidate, e.g. gemm_fp32's embedded library, is not ours to rewrite).
        best = next((a for a in beam if a.passed and a.candidate.generator == self.name), None)
        context = ""
        if best is not None:
            timing = f" It runs in {best.kernel_ms:.4f} ms ({self.baseline_label}: {best.baseline_kernel_ms:.4f} ms)." \
                if best.kernel_ms and best.baseline_kernel_ms else ""
            context = f"## Your best module so far\n\nIt passed Gates 1-2.{timing}\n\n```python\n{best.candidate.source}\n```"
        if diversify:
            context += "\n\nRecent attempts kept to the same few approaches: choose a substantially different strategy."
        messages = [{"role": "system", "content": prompt(self.system_prompt)},
                    {"role": "user", "content": prompt(
                        self.task_prompt, group=group.name, **self._task_values(group),
                        contract=interface(group), reference=run_function_source(group).rstrip(),
                        kernels=kernel_text(group), policy=target.precision, precision=precision_rules(target),
                        profile=profile_context(target), context=context.strip(),
                        memory=self.memory.prompt_text(target.name), avoid=avoid_context(self.avoid),
                        strategies=", ".join(STRATEGIES))}]
        self._started += 1
        return Conversation(self._started, messages, best.candidate.id if best else None,
                            self._new_plan(target, chain))

    def _task_values(self, group: LibraryGroup) -> dict[str, str]:
        """What this agent's task prompt adds to the shared fields: the library call and its ATen graph."""
        summary = f"{group.op} by `{group.anchor_target}`" + (
            f", then {len(group.epilogue)} fused kernel(s)" if group.epilogue else "")
        return {"summary": summary, "aten": aten_description(group)}

    def _next_turn(self, target: KernelTarget, conv: Conversation, last: Attempt, history: list[Attempt],
                   chain: int, diversify: bool) -> str:
        conv.plan = self._new_plan(target, chain)
        return prompt("codegen_improve", timing=_timing(last), memory=self.memory.prompt_text(target.name),
                      strategies=", ".join(STRATEGIES))

    def _replied(self, conv: Conversation, reply: str, prose: str) -> None:
        """The reply's STRATEGY line files its attempt (memory, strategy outcomes, the team's AVOID list)."""
        strategy, _ = parse_plan(reply)  # the line may stand anywhere before the code block
        _, text = parse_plan(prose)
        avoided = strategy in {a.get("strategy") for a in self.avoid}
        conv.plan = dataclasses.replace(conv.plan, strategy=strategy, text=text, call=conv.calls[-1],
                                        avoided=avoided)

    def _refusal(self, target: KernelTarget, code: str) -> Optional[str]:
        try:
            ast.parse(code)
        except SyntaxError:
            return None  # Gate 1 reports where
        if declared_precision(code) is None:
            return ("the module does not declare its arithmetic: add a module-level constant, e.g. "
                    'KERNELOPT_PRECISION = "fp32" (or the fp32 emulation it uses; see the precision policy)')
        return None
