"""The verification cascade (docs/architecture.md, Gates): Gates 1–4 and the ranked waterfall.

Each gate is a small module with a typed result (`GateResult`); none needs a GPU:
the gates work on CUDA tensors and on CPU tensors under the Triton interpreter.
"""
from kernelopt.verify.result import GateResult

__all__ = ["GateResult"]
