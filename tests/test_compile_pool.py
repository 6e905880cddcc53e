"""compiled/compile_pool.py: what a capture records of Inductor's compile pool, and the one ptxas both sides use
(issue 37). The pool starting in a sandboxed child is tests/test_sandbox.py's."""
from __future__ import annotations

import os
import subprocess
import sys

from kernelopt.compiled.compile_pool import CompilePool

_WORKER_PTXAS = ("import os\nfrom torch._inductor.runtime.compile_tasks import _set_triton_ptxas_path\n"
                 "_set_triton_ptxas_path()\nprint(os.environ.get('TRITON_PTXAS_PATH', ''))")
_OURS = ("from kernelopt.compiled.compile_pool import share_ptxas_with_workers\n"
         "print(share_ptxas_with_workers())")


def _python(code: str, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k != "TRITON_PTXAS_PATH"}
    return subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True,
                          check=True, timeout=120).stdout.strip()


def test_the_compiling_process_takes_the_ptxas_a_compile_worker_takes_at_its_start():
    # what torch._inductor.compile_worker does first, against what a capture does before compiling
    assert _python(_OURS) == _python(_WORKER_PTXAS)
    assert _python(_OURS, TRITON_PTXAS_PATH="/opt/cuda/bin/ptxas") == "/opt/cuda/bin/ptxas"  # a user's choice stays


def test_a_recorded_compile_pool_is_read_as_data():
    assert CompilePool.from_dict({}) is None and CompilePool.from_dict(["threads"]) is None
    assert CompilePool.from_dict({"threads": "16", "ready": True, "waited_s": 1.0, "error": ""}) is None
    assert CompilePool.from_dict({"threads": 16, "ready": True, "waited_s": 1.0, "error": "", "ptxas": 3}) is None
    stuck = CompilePool.from_dict({"threads": 16, "ready": False, "waited_s": 120, "error": "x" * 1000})
    assert stuck is not None and len(stuck.error) <= 300 and "did not start" in stuck.describe()
    assert stuck.in_brief().startswith("serially")
    assert CompilePool(1, False, 0.0).in_brief() == "in one process"
    ready = CompilePool(16, True, 2.5, ptxas="/t/bin/ptxas")
    assert CompilePool.from_dict(ready.to_dict()) == ready
    assert ready.describe().endswith("ready after 2.5 s; ptxas: /t/bin/ptxas") and ready.in_brief() == "with 16 compile workers"
