"""Small Triton kernels used as test fixtures by the gate tests.

Each file is a candidate module in Inductor's launch style: a @triton.jit kernel
and `run(*args, stream=None)` taking pointer arguments, then numels. Tests read
them as source text (the gates import candidates from source), so a file here is
never imported as part of this package.
"""
from pathlib import Path

KERNELS = Path(__file__).parent


def source(name: str) -> str:
    return (KERNELS / f"{name}.py").read_text()
