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


_VERSION_KEYED_BEFORE = (
    "import os\nfrom triton.backends.nvidia.compiler import get_ptxas_version\n"
    "before = get_ptxas_version(80)\n"  # as a kernel compiled before the capture would have keyed it
    "os.environ['TRITON_PTXAS_PATH'] = os.environ.pop('SHARED_PTXAS')\n"
    "from kernelopt.compiled.compile_pool import share_ptxas_with_workers\n"
    "share_ptxas_with_workers()\n"
    "print('release 99.9' not in before, 'release 99.9' in get_ptxas_version(80))")


def test_a_ptxas_version_triton_read_before_the_capture_does_not_key_its_kernels(tmp_path):
    # Triton memoizes the ptxas version its cache keys hold: read once with its own ptxas, every later key would
    # still say that version although the process now compiles with the workers' ptxas (another version). sm_80:
    # the architecture every supported Triton compiles with TRITON_PTXAS_PATH (3.6 up to sm_9x, 3.9 below sm_90)
    fake = tmp_path / "ptxas"
    fake.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 99.9, V99.9.1'\n")
    fake.chmod(0o755)
    assert _python(_VERSION_KEYED_BEFORE, SHARED_PTXAS=str(fake)) == "True True"
