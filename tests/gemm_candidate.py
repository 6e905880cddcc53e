"""Loading gemm_fp32's candidate code in a test, as the runtime loads a candidate module."""
from __future__ import annotations

import sys
import types


def load_source(source: str, name: str) -> types.ModuleType:
    """`source` executed as module `name`, registered in sys.modules (its dataclasses look their module up there)."""
    module = types.ModuleType(name)
    sys.modules[name] = module
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def emu_namespace() -> dict:
    """What every gemm_fp32 candidate module defines (search.generators.gemm_group embeds it verbatim): `_Emu`,
    `_direct_out` and the constructions of kernels/gemm_emulated.py."""
    from kernelopt.search.generators.gemm_group import _EMU_CLASS, _gemm_library_source

    return load_source(_gemm_library_source() + _EMU_CLASS, "kernelopt_test_gemm_candidate").__dict__
