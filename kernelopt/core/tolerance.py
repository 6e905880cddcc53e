"""The dtypes a job runs in, and the tolerances Gates 2 and 3 compare with in each (docs/architecture.md, Gates).

One table: every gate that compares with a fixed tolerance asks it here, by the
job's dtype, so an fp32 run and a bf16 run of the same suite are each judged by
the tolerance that fits their arithmetic — and say which one they used.

- fp32: the product spec as written: Gate 2 allclose(rtol=atol=1e-3), Gate 3 allclose(1e-4).
- bf16 and fp16: the product spec is silent. We use KernelBench's tolerance for these
  dtypes, rtol = atol = 1e-2, for both gates: an output rounded to bf16 carries a
  relative error up to 2^-8 ≈ 3.9e-3 per element from the rounding alone (fp16
  2^-11 ≈ 4.9e-4), so fp32's 1e-4 would reject the compiler's own code. The value
  is KernelBench's, not ours: it is the tolerance its bf16/fp16 results are judged by.

Gate 3's float64 fallback (ρ = d_opt/d_ref ≤ ρ_max, the exact branch, the tf32
bound) is unchanged in every dtype: ρ compares the candidate's error with eager's
own error in the same dtype, so it needs no tolerance of its own.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Optional, Union


class Dtype(str, Enum):
    """The floating-point dtype a job casts the model and its inputs to (fp32 by default; docs/architecture.md, Overview)."""

    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"

    @classmethod
    def parse(cls, value: Union[str, "Dtype"]) -> "Dtype":
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"dtype must be fp32, bf16 or fp16, got {value!r}") from None

    @classmethod
    def of_torch_name(cls, name: str) -> Optional["Dtype"]:
        """The Dtype of a torch dtype name ("bfloat16", "torch.float32"), or None for any other dtype."""
        return next((d for d in cls if d.torch_name == name.removeprefix("torch.")), None)

    @property
    def torch_name(self) -> str:
        """The name torch gives it (`torch.<name>`), as capture.json and Inductor's modules write it."""
        return {Dtype.FP32: "float32", Dtype.BF16: "bfloat16", Dtype.FP16: "float16"}[self]


DTYPES: tuple[str, ...] = tuple(d.value for d in Dtype)


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float
    source: str  # where the value comes from, for reports and reviewers

    def text(self) -> str:
        """'rtol=atol=1e-4', as the spec and the reports write it."""
        if self.rtol == self.atol:
            return f"rtol=atol={_short(self.rtol)}"
        return f"rtol={_short(self.rtol)}, atol={_short(self.atol)}"


def _short(x: float) -> str:
    mantissa, exponent = f"{x:.3e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


# KernelBench judges bf16/fp16 results with atol = rtol = 1e-2 (see the module doc).
_KERNELBENCH_LOW = Tolerance(1e-2, 1e-2, "KernelBench's bf16/fp16 tolerance (the spec is silent on these dtypes)")

GATE2: dict[Dtype, Tolerance] = {
    Dtype.FP32: Tolerance(1e-3, 1e-3, "the spec's Gate 2 (docs/architecture.md, Gate 2)"),
    Dtype.BF16: _KERNELBENCH_LOW,
    Dtype.FP16: _KERNELBENCH_LOW,
}
GATE3: dict[Dtype, Tolerance] = {
    Dtype.FP32: Tolerance(1e-4, 1e-4, "the spec's Gate 3 (docs/architecture.md, Gate 3)"),
    Dtype.BF16: _KERNELBENCH_LOW,
    Dtype.FP16: _KERNELBENCH_LOW,
}


def gate2_tolerance(dtype: Union[str, Dtype] = Dtype.FP32) -> Tolerance:
    """Gate 2's allclose tolerance for a job in `dtype` (kernel vs Inductor's kernel, on real inputs)."""
    return GATE2[Dtype.parse(dtype)]


def gate3_tolerance(dtype: Union[str, Dtype] = Dtype.FP32) -> Tolerance:
    """Gate 3's first check, allclose against eager in the job's dtype."""
    return GATE3[Dtype.parse(dtype)]
