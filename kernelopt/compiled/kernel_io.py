"""The kernel harness: one sub-kernel's real inputs and outputs, captured from a run.

The compiled module is run with one kernel's launch instrumented: its arguments
are cloned just before the launch (the real inputs: weights and intermediate
buffers as the model produces them) and just after (the reference outputs of
Inductor's own kernel). Gate 2 replays candidates on copies of these.
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any


@dataclass
class KernelIO:
    """One launch of one kernel: arguments before and after, on the device they ran on."""

    kernel: str
    before: list[Any]  # tensors (cloned, same strides) and scalars, in launch order
    after: list[Any]  # the same arguments after Inductor's kernel ran
    launch_kwargs: dict = field(default_factory=dict)  # non-tensor keyword args (stream dropped)

    def nbytes(self) -> int:
        """Bytes of the distinct tensors it holds (an argument the launch left alone is held once)."""
        import torch

        seen: dict[int, int] = {}
        for x in self.before + self.after:
            if isinstance(x, torch.Tensor):
                seen[id(x)] = x.untyped_storage().nbytes()
        return sum(seen.values())

    def written(self) -> list[int]:
        """Indexes of tensor arguments the reference launch changed (outputs, in/out)."""
        import torch

        return [
            i for i, (b, a) in enumerate(zip(self.before, self.after, strict=False))
            if isinstance(b, torch.Tensor) and not torch.equal(b, a) and not _both_nan_equal(b, a)
        ]


def _both_nan_equal(a, b) -> bool:
    import torch

    return a.is_floating_point() and torch.equal(torch.nan_to_num(a, nan=0.0), torch.nan_to_num(b, nan=0.0)) \
        and torch.equal(a.isnan(), b.isnan())


def unchanged(now: Any, before: Any) -> bool:
    import torch

    if not isinstance(now, torch.Tensor):
        return False
    return torch.equal(now, before) or _both_nan_equal(now, before)


def clone_arg(x: Any) -> Any:
    """A copy with the same shape, strides and storage offset layout as `x`."""
    import torch

    if not isinstance(x, torch.Tensor):
        return x
    out = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)
    out.copy_(x)
    return out


def poison_(t) -> None:
    """Poison a tensor with the pattern Gate 2 recognises as "never written"."""
    # here, not at module level: core.compare imports torch, and this module stays torch-free
    # (verify.interpreter, which the torch-free job orchestrator imports, imports it)
    from kernelopt.core.compare import poison_ as gate_poison

    gate_poison(t)


class _Recorder:
    """Stands in for one kernel object in the module; forwards every launch.

    Pure outputs (`poison` indexes) are poisoned before the launch, so that an
    element the kernel never writes is recognisable in the reference.
    """

    def __init__(self, name: str, inner: Any, poison: list[int]):
        self.name = name
        self.inner = inner
        self.poison = poison
        self.records: list[KernelIO] = []

    def run(self, *args, **kwargs):
        for i in self.poison:
            poison_(args[i])
        before = [clone_arg(a) for a in args]
        result = self.inner.run(*args, **kwargs)
        # An argument the launch left alone is held once (inputs can be most of the memory).
        after = [b if unchanged(a, b) else clone_arg(a) for a, b in zip(args, before, strict=True)]
        extra = {k: v for k, v in kwargs.items() if k != "stream"}
        self.records.append(KernelIO(self.name, before, after, extra))
        return result

    def __getattr__(self, item):
        return getattr(self.inner, item)


def output_indexes(arg_names: list[str]) -> list[int]:
    """Arguments Inductor's naming marks as pure outputs (out_ptrN; not in_out_ptrN)."""
    return [i for i, n in enumerate(arg_names) if n.startswith("out_ptr")]


class RecordedOnDemand:
    """The seeds' recorded launches, one on the device at a time, each recorded again when asked for.

    For launches too large for the device to hold every seed (a 12 GiB input, its output
    before and after, three seeds: ~116 GB): `record(seed)` re-runs the compiled module
    with the launch instrumented, which costs one model call, where copying the seed in
    from host memory would cost tens of GB over PCIe and as much page-locked host memory.
    A record handed out is valid until the next one is asked for: its tensors are then
    released, so two seeds never share the device.
    """

    def __init__(self, record, seeds: list[int], first: "KernelIO | None" = None):
        self._record, self.seeds = record, list(seeds)
        self._held: tuple[int, KernelIO] | None = (0, first) if first is not None else None

    def __len__(self) -> int:
        return len(self.seeds)

    def __getitem__(self, i: int) -> KernelIO:
        if not 0 <= i < len(self.seeds):
            raise IndexError(i)
        if self._held is not None and self._held[0] == i:
            return self._held[1]
        if self._held is not None:
            old = self._held[1]
            old.before.clear()
            old.after.clear()
            self._held = None
            _release_cached_device_memory()
        io = self._record(self.seeds[i])
        self._held = (i, io)
        return io


def _release_cached_device_memory() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def capture_kernel_io(mod: types.ModuleType, kernel: str, run_module,
                      poison: list[int] | None = None) -> list[KernelIO]:
    """Run `run_module(mod)` with `kernel`'s launches recorded; return one KernelIO per launch."""
    original = getattr(mod, kernel)
    recorder = _Recorder(kernel, original, poison or [])
    setattr(mod, kernel, recorder)
    try:
        run_module(mod)
    finally:
        setattr(mod, kernel, original)
    if not recorder.records:
        raise RuntimeError(f"kernel {kernel} was not launched during the run")
    return recorder.records
