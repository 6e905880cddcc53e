"""KernelOPT: verified, dispatch-aware optimization of torch.compile's Triton kernels.

The pipeline's stages and the service are this package's subpackages (`kernelopt.load`,
`kernelopt.compiled`, … `kernelopt.migrations`; docs/architecture.md). The checkout's
top-level `api/`, `worker/`, `agents/`, `verify/` and `migrations/` are links into it.
"""
from __future__ import annotations

from pathlib import Path

# The embedded default problems of `kernelopt optimize` (package data).
EXAMPLES: Path = Path(__file__).resolve().parent / "examples"
