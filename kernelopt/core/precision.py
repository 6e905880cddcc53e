"""The precision vocabulary (docs/architecture.md, Precision policies): the job's policy, and what a
candidate may declare about its own arithmetic (`KERNELOPT_PRECISION`, module level).

Shared by the API and CLI (the option), the generators and agents (what they declare) and the gates
(what they admit); finding reduced-precision math in source is verify/precision.py's.
"""
from __future__ import annotations

import ast
from enum import Enum
from typing import Union


class PrecisionPolicy(str, Enum):
    STRICT = "strict"  # float64 fallback only: ρ ≤ ρ_max, or the exact branch
    TF32 = "tf32"  # also accept d_opt ≤ max(5e-3, 1e-3·max|r32|) (the paper's behaviour)

    @classmethod
    def parse(cls, value: Union[str, "PrecisionPolicy"]) -> "PrecisionPolicy":
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"precision policy must be 'strict' or 'tf32', got {value!r}") from None


#: Emulated fp32 a candidate may declare (`KERNELOPT_PRECISION = "presplit"`, module level):
#: products on tensor cores, operands split so the result is fp32-accurate. Under `strict`
#: such a candidate is admitted by the float64 ρ test only (never by allclose alone).
FP32_EMULATIONS = {"auto", "presplit", "tf32x3", "3xtf32", "bf16x6", "split3"}
#: Full fp32 a candidate may declare.
FULL_FP32 = {"ieee", "fp32"}
#: A candidate whose only arithmetic beyond Inductor's kernels is the vendor library's, called as the
#: baseline calls it (another cuDNN algorithm, say: search/generators/cudnn_autotune.py) declares this: its library
#: calls run under the caller's math modes, the ones recorded at capture for the baseline. It is then
#: no lower in precision than the call it replaces, under either policy; what those modes compute in
#: (cuDNN TF32 by PyTorch's default) is stated for baseline and replacement alike (library_math_markers).
LIBRARY_MODE = "library"


def declared_precision(source: str) -> str | None:
    """The candidate's own statement of its arithmetic: module-level `KERNELOPT_PRECISION`."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "KERNELOPT_PRECISION"
                                                 for t in node.targets)
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            return node.value.value
    return None
