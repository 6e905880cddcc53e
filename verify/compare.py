"""Tensor comparisons that say precisely what differs, and the poison pattern.

Shared by Gate 2 (kernel outputs), single-kernel mode and Gate 3. Every
function returns None when the tensors agree, else one line of feedback text.
"""
from __future__ import annotations

from typing import Any, Optional

import torch

# Integer views of the same element size: comparing bits makes NaN == NaN with the
# same payload, and lets the poison be recognised exactly (see POISON_BITS).
_INT_OF_SIZE = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}

# The poison / guard pattern, as raw bits per floating dtype. Each is a quiet NaN
# with a payload no arithmetic produces (a computed NaN is canonical, 0x7fc00000),
# so "still holds the poison" means "never written", and a read of it by the
# kernel turns its result into NaN, which the value check then catches.
_FLOAT_POISON = {
    torch.float16: 0x7E5A,
    torch.bfloat16: 0x7FDA,
    torch.float32: 0x7FC5A5A5,
    torch.float64: 0x7FF85A5A5A5A5A5A,
}
# Integers and bools: a fixed byte pattern (0x5a repeated); for bool it is not a
# valid value (0/1), so any real store is distinguishable from it.
_INT_POISON = {1: 0x5A, 2: 0x5A5A, 4: 0x5A5A5A5A, 8: 0x5A5A5A5A5A5A5A5A}


def bits(t: torch.Tensor) -> torch.Tensor:
    """`t` reinterpreted as integers of the same size (same shape and strides)."""
    return t.view(_INT_OF_SIZE[t.element_size()])


def poison_bits(dtype: torch.dtype) -> int:
    """The raw bit pattern used to poison and guard tensors of `dtype`, as a signed int."""
    size = torch.empty((), dtype=dtype).element_size()
    raw = _FLOAT_POISON.get(dtype, _INT_POISON[size])
    if size > 1 and raw >= 1 << (8 * size - 1):  # torch int views are signed
        raw -= 1 << (8 * size)
    return raw


def poison_(t: torch.Tensor) -> torch.Tensor:
    """Fill `t` in place with the poison pattern (NaN for floats)."""
    bits(t).fill_(poison_bits(t.dtype))
    return t


def is_poison(t: torch.Tensor) -> torch.Tensor:
    """Bool mask: which elements still hold the poison pattern (were never written)."""
    return bits(t) == poison_bits(t.dtype)


def fmt_index(flat: int, shape: tuple[int, ...]) -> str:
    """A flat (row-major) position as a tensor index, e.g. (12, 7)."""
    if not shape:
        return "()"
    idx = []
    for size in reversed(shape):
        idx.append(flat % size)
        flat //= size
    return "(" + ", ".join(str(i) for i in reversed(idx)) + ")"


def _val(x: Any) -> str:
    return f"{x:.6g}" if isinstance(x, float) else str(x)


def compare_exact(actual: torch.Tensor, expected: torch.Tensor, label: str) -> Optional[str]:
    """Bit-for-bit equality (integers, bools, and inputs that must stay untouched)."""
    if actual.shape != expected.shape:
        return f"{label}: shape {tuple(actual.shape)} differs from expected {tuple(expected.shape)}"
    diff = (bits(actual) != bits(expected.to(actual.device))).reshape(-1)
    n = int(diff.sum())
    if n == 0:
        return None
    first = int(diff.nonzero()[0])
    a = actual.reshape(-1)[first].item() if not actual.dtype.is_complex else "?"
    e = expected.reshape(-1)[first].item() if not expected.dtype.is_complex else "?"
    never = bool(is_poison(actual).reshape(-1)[first])
    note = " (never written: still holds the poison)" if never else ""
    return (f"{label}: {n} of {actual.numel()} elements differ; first at index "
            f"{fmt_index(first, tuple(actual.shape))}: got {_val(a)}{note}, expected {_val(e)}")


def compare_close(actual: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float,
                  label: str) -> Optional[str]:
    """allclose(actual, expected, rtol, atol, equal_nan=True), in float64, with feedback.

    Integer and bool tensors must match exactly. NaN must appear exactly where
    the expected tensor has NaN; infinities must match in sign.
    """
    if actual.shape != expected.shape:
        return f"{label}: shape {tuple(actual.shape)} differs from expected {tuple(expected.shape)}"
    if actual.dtype != expected.dtype:
        return f"{label}: dtype {actual.dtype} differs from expected {expected.dtype}"
    if not actual.is_floating_point():
        return compare_exact(actual, expected, label)
    a = actual.detach().to(torch.float64).reshape(-1)
    e = expected.detach().to(device=actual.device, dtype=torch.float64).reshape(-1)
    close = torch.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
    n_bad = int((~close).sum())
    if n_bad == 0:
        return None
    shape = tuple(actual.shape)
    err = (a - e).abs()
    err = torch.where(close, torch.zeros_like(err), torch.nan_to_num(err, nan=float("inf")))
    worst = int(err.argmax())
    av, ev = a[worst].item(), e[worst].item()
    where = fmt_index(worst, shape)
    count = f"{n_bad} of {a.numel()} elements mismatch"
    if bool(is_poison(actual).reshape(-1)[worst]):
        never = int((is_poison(actual).reshape(-1) & ~close).sum())
        return (f"{label}: {count}; {never} were never written (they still hold the poison NaN), "
                f"first at index {where} where {_val(ev)} was expected — check the masks and the "
                f"grid cover every element")
    if av != av or ev != ev:  # NaN on one side only
        return (f"{label}: {count}; at index {where} got {_val(av)}, expected {_val(ev)} "
                f"(NaN must appear exactly where the reference has NaN)")
    return (f"{label}: max abs error {err[worst].item():.3g} at index {where} (got {_val(av)}, "
            f"expected {_val(ev)}) exceeds atol {atol:g} + rtol {rtol:g}*|ref|; {count}")


def max_abs_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """max |actual − expected| over positions where both are finite (0.0 if none), in float64."""
    if not (actual.is_floating_point() and expected.is_floating_point()) or actual.numel() == 0:
        return 0.0 if torch.equal(bits(actual), bits(expected.to(actual.device))) else float("inf")
    a = actual.detach().to(torch.float64)
    e = expected.detach().to(device=a.device, dtype=torch.float64)
    both = torch.isfinite(a) & torch.isfinite(e)
    return float((a - e).abs()[both].max()) if bool(both.any()) else 0.0
