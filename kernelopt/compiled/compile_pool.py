"""Inductor's pool of compile worker processes: started, and waited for, before a capture compiles.

Inductor compiles a graph's Triton kernels, and under max-autotune every template choice it times, in a pool
of worker processes, but only once `AsyncCompile.use_process_pool()` finds the pool ready. Until then each
kernel is compiled in the compiling process, one after another. The pool starts lazily and its workers each
import torch, which takes seconds (more in a sandbox under gVisor). So on a large network the first lowerings can
run serially while the pool is still starting. The capture therefore starts the pool first, waits for it
(bounded), and says what it got in the job's log and in the capture.

One ptxas for both sides. On an H100, ResNet-18's capture spent 469 of its 502 s in Inductor's autotune
"benchmarking" (3-5 s a template choice, 0.0003 s "precompiling"; the first four shapes, timed before the pool
was ready, took 0.01-0.04 s a choice: benchmarks/results/2026-12-07-h100-cudnn-helion-resnet). A pool worker compiles a
choice into Triton's on-disk cache; the compiling process, timing the choice, loads its module afresh and
compiles it again, which is cheap only if it finds the worker's binary there. Triton keys that cache by the
ptxas version, and the workers point `TRITON_PTXAS_PATH` at the ptxas bundled with torch (where torch ships
one) as they start, while the compiling process does so only on its own compile path, which a ready pool leaves
unused. So where torch's ptxas and Triton's differ, every choice is compiled twice, the second time serially.
`share_ptxas_with_workers` makes the compiling process choose the workers' ptxas before anything compiles (the
most likely cause, not yet confirmed on a GPU: benchmarks/compile_time_probe.py times both).
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import asdict, dataclass

from kernelopt.core.text import clip

#: how long a capture waits for the pool before compiling anyway (serially, for as long as it is not ready)
POOL_WAIT_S = 120.0


@dataclass(frozen=True)
class CompilePool:
    """What Inductor's compile pool was when the capture began compiling."""

    threads: int  # Inductor's compile_threads (1: it compiles in the calling process by design)
    ready: bool  # the worker processes answered
    waited_s: float
    error: str = ""  # why the pool did not start, when it raised
    ptxas: str = ""  # TRITON_PTXAS_PATH as the compile began ("": Triton's own ptxas)

    def describe(self) -> str:
        if self.threads <= 1:
            return "compile: Inductor compiles in the job's process (compile_threads = 1)"
        if self.ready:
            ptxas = self.ptxas or "Triton's own"
            return f"compile: {self.threads} compile worker processes ready after {self.waited_s:.1f} s; ptxas: {ptxas}"
        why = f": {self.error}" if self.error else f" within {self.waited_s:.0f} s"
        return (f"compile: Inductor's {self.threads} compile worker processes did not start{why}; "
                "its kernels are compiled one after another in the job's process until they do")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: object) -> "CompilePool | None":
        """The pool a capture child recorded, read as data (None when absent or not of this shape)."""
        if not isinstance(data, dict):
            return None
        threads, ready, waited, error = (data.get(k) for k in ("threads", "ready", "waited_s", "error"))
        ptxas = data.get("ptxas", "")
        if not (isinstance(threads, int) and isinstance(ready, bool) and isinstance(waited, (int, float))
                and isinstance(error, str) and isinstance(ptxas, str)):
            return None
        return cls(threads, ready, float(waited), clip(error, 300), clip(ptxas, 300))

    def in_brief(self) -> str:
        """A few words for the compile stage's progress line."""
        if self.threads <= 1:
            return "in one process"
        if self.ready:
            return f"with {self.threads} compile workers"
        return "serially (Inductor's compile workers did not start)"


def share_ptxas_with_workers() -> str:
    """Point this process's Triton at the ptxas Inductor's compile workers use (see the module's docstring), as
    Inductor's own in-process compile path does; return TRITON_PTXAS_PATH ("" where Triton keeps its own).

    Triton reads the ptxas version into its cache key once per process (`get_ptxas_version` is memoized): a
    version read before this call, by anything that compiled or hashed a kernel, would be Triton's own ptxas's
    and keep the keys apart. So the memo is dropped and the next key reads the shared ptxas."""
    try:
        from torch._inductor.runtime.compile_tasks import _set_triton_ptxas_path
    except ImportError:  # a torch without it: its workers set nothing either
        return os.environ.get("TRITON_PTXAS_PATH", "")
    _set_triton_ptxas_path()
    try:
        from triton.backends.nvidia.compiler import get_ptxas_version
    except ImportError:  # no Triton CUDA backend: nothing is keyed by a ptxas
        pass
    else:
        getattr(get_ptxas_version, "cache_clear", lambda: None)()
    return os.environ.get("TRITON_PTXAS_PATH", "")


def start_compile_pool(wait_s: float = POOL_WAIT_S, share_ptxas: bool = True) -> CompilePool:
    """Start Inductor's compile pool and wait up to `wait_s` for its workers; with `share_ptxas`, first make this
    process compile with the workers' ptxas (`share_ptxas_with_workers`)."""
    from torch._inductor.async_compile import AsyncCompile, get_compile_threads

    ptxas = share_ptxas_with_workers() if share_ptxas else os.environ.get("TRITON_PTXAS_PATH", "")
    threads = int(get_compile_threads())
    if threads <= 1:
        return CompilePool(threads, False, 0.0, ptxas=ptxas)
    t0 = time.monotonic()
    try:
        AsyncCompile.warm_pool()
        AsyncCompile.use_process_pool()  # submits the pool's readiness probe
        future = getattr(AsyncCompile, "_ready_future", None)  # a private name: absent, the answer below decides
        if future is not None:
            future.result(timeout=wait_s)
    except Exception as exc:  # TimeoutError, or the pool could not be made (a daemon process, no /dev/shm)
        waited = round(time.monotonic() - t0, 1)
        error = "" if isinstance(exc, TimeoutError) else clip(f"{type(exc).__name__}: {exc}", 300)
        return CompilePool(threads, False, waited, error, ptxas)
    return CompilePool(threads, bool(AsyncCompile.use_process_pool()), round(time.monotonic() - t0, 1), ptxas=ptxas)


def announce(pool: CompilePool) -> None:
    """One line in the job's log (the child's stderr), written before the compile that may outlive the child."""
    print(pool.describe(), file=sys.stderr, flush=True)
