"""Guarded copies of a launch's tensor arguments.

Each tensor argument becomes a view (same shape, strides) into a larger flat
buffer whose guard bands before and after the view's storage span, and any
stride gaps inside it, hold a guard pattern. After the candidate runs, a
guard element that changed is a write outside that argument: the out-of-bounds
store a missing mask makes, which on a GPU would silently corrupt a
neighbouring buffer of the model.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch

from kernelopt.core.compare import bits, guard_bits, poison_

_MIN_GUARD_BYTES = 16 << 10  # catches an unmasked block (or row) past either end
_MAX_GUARD_BYTES = 8 << 20  # bounds the memory cost for large tensors


def storage_extent(t: torch.Tensor) -> int:
    """Number of storage elements the view spans, from its first to its last element."""
    if t.numel() == 0:
        return 0
    return 1 + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride(), strict=True))


def _guard_elems(extent: int, itemsize: int) -> int:
    nbytes = min(max(extent * itemsize, _MIN_GUARD_BYTES), _MAX_GUARD_BYTES)
    nbytes = (nbytes + 255) // 256 * 256  # keep the view 256-byte aligned, like cudaMalloc
    return nbytes // itemsize


@dataclass
class GuardedTensor:
    buffer: torch.Tensor  # flat: guard | span of the view | guard
    view: torch.Tensor  # the argument handed to the kernel
    guard: int  # elements before the view's span (and at least as many after)
    extent: int  # elements in the view's span

    @classmethod
    def build(cls, t: torch.Tensor, poisoned: bool) -> "GuardedTensor":
        """A guarded copy of `t`; if `poisoned`, its elements hold the poison instead of t's values."""
        t = t.detach()
        extent = storage_extent(t)
        guard = _guard_elems(extent, t.element_size())
        buffer = torch.empty(2 * guard + extent, dtype=t.dtype, device=t.device)
        bits(buffer).fill_(guard_bits(t.dtype))
        view = buffer.as_strided(t.shape, t.stride(), guard)
        if poisoned:
            poison_(view)
        else:
            bits(view).copy_(bits(t))  # bit copy: NaN payloads survive
        return cls(buffer, view, guard, extent)

    def violation(self, label: str) -> Optional[str]:
        """None if every element outside the view still holds the guard pattern, else what was written where."""
        covered = torch.zeros(self.buffer.numel(), dtype=torch.bool, device=self.buffer.device)
        covered.as_strided(self.view.shape, self.view.stride(), self.guard).fill_(True)
        changed = (bits(self.buffer) != guard_bits(self.buffer.dtype)) & ~covered
        if not bool(changed.any()):
            return None
        pos = changed.nonzero().reshape(-1).cpu()
        end = self.guard + self.extent
        before = pos[pos < self.guard]
        after = pos[pos >= end]
        gaps = pos[(pos >= self.guard) & (pos < end)]
        parts = []
        if after.numel():
            parts.append(f"{after.numel()} past the end (up to {int(after.max()) - end + 1} elements beyond it)")
        if before.numel():
            parts.append(f"{before.numel()} before the start (from {self.guard - int(before.min())} elements before it)")
        if gaps.numel():
            parts.append(f"{gaps.numel()} inside its span but between its strided elements")
        return (f"{label}: the candidate wrote {pos.numel()} elements outside the argument's extent: "
                + "; ".join(parts) + " — every store needs a mask that keeps it inside the tensor")


class GuardedLaunch:
    """Guarded copies of one launch's arguments; scalars pass through unchanged."""

    def __init__(self, before: list[Any], poisoned: set[int]):
        self.slots: list[Optional[GuardedTensor]] = [
            GuardedTensor.build(a, i in poisoned) if isinstance(a, torch.Tensor) else None
            for i, a in enumerate(before)
        ]
        self.args: list[Any] = [s.view if s is not None else a for s, a in zip(self.slots, before, strict=True)]

    def violations(self, labels: list[str]) -> Optional[str]:
        for slot, label in zip(self.slots, labels, strict=True):
            msg = slot.violation(label) if slot is not None else None
            if msg:
                return msg
        return None
