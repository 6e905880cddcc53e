"""Decoding what a sandboxed child sends back, without letting it run code in the parent.

A child runs submitted code, so its reply is attacker-controlled bytes. Plain
`pickle.loads` would call any function the bytes name; this unpickler resolves
only plain data: builtin containers and scalars, and, from KernelOPT's own
packages, classes that are dataclasses, enums or exceptions. Their objects are
rebuilt from state, never constructed: a pickle that *calls* a dataclass (the
REDUCE opcode, which ran `JobContext.__post_init__` in the orchestrator and made
directories outside the job) is refused, and `copyreg._reconstructor` may only
start from `object` (it would call its base's `__init__`). The pure-Python
unpickler is used so that the call opcode can be checked. Tensors never cross
this way (their unpickling goes through `torch.load`); stages return them as files.
"""
from __future__ import annotations

import _compat_pickle
import dataclasses
import importlib
import io
import pickle
from enum import Enum
from typing import Any

from kernelopt.core.layout import ENGINE_PACKAGES

# kernelopt's subpackages whose dataclasses/enums/exceptions may appear in a reply (the engine's and the
# worker's; not the rest of the service's), and the checkout's benchmarks/ tooling.
OWN_PACKAGES = frozenset(ENGINE_PACKAGES + ("worker",))


def _own(module: str) -> bool:
    parts = module.split(".")
    return (parts[0] == "kernelopt" and (len(parts) == 1 or parts[1] in OWN_PACKAGES)) or parts[0] == "benchmarks"

_SAFE_GLOBALS = {
    ("builtins", n) for n in ("set", "frozenset", "complex", "slice", "range", "bytearray", "bytes", "list",
                              "dict", "tuple", "int", "float", "str", "bool", "object")
} | {
    ("copyreg", "_reconstructor"), ("collections", "OrderedDict"), ("collections", "defaultdict"),
    ("collections", "deque"), ("datetime", "datetime"), ("datetime", "date"), ("datetime", "timedelta"),
    ("datetime", "timezone"), ("pathlib", "PosixPath"), ("pathlib", "PurePosixPath"), ("pathlib", "Path"),
    ("torch", "Size"), ("torch", "device"), ("torch.torch_version", "TorchVersion"),
    ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
}


def _torch_dtype(module: str, name: str) -> Any | None:
    if module != "torch":
        return None
    import torch

    value = getattr(torch, name, None)
    return value if isinstance(value, torch.dtype) else None


def _reconstructor(cls: type, base: type, state: Any) -> Any:
    """copyreg._reconstructor (protocols 0-1), from `object` only: another base's `__init__` would run."""
    if base is not object:
        raise pickle.UnpicklingError(f"a child's reply may not rebuild {getattr(cls, '__name__', cls)!r} "
                                     f"through {getattr(base, '__name__', base)!r}")
    return object.__new__(cls)


class _Unpickler(pickle._Unpickler):  # the Python implementation: its opcode table can be amended
    dispatch = dict(pickle._Unpickler.dispatch)

    def load_reduce(self) -> None:
        stack: list = self.stack  # type: ignore[attr-defined]  # the Python unpickler's own stack
        args = stack.pop()
        func = stack[-1]
        if isinstance(func, type) and dataclasses.is_dataclass(func):
            raise pickle.UnpicklingError(f"a child's reply may not construct {func.__module__}.{func.__qualname__} "
                                         "(its objects are rebuilt from state, never called)")
        stack[-1] = func(*args)

    dispatch[pickle.REDUCE[0]] = load_reduce  # type: ignore[assignment]

    def find_class(self, module: str, name: str) -> Any:
        if getattr(self, "proto", 5) < 3 and getattr(self, "fix_imports", True):  # Python 2 names, mapped as the C unpickler does
            if (module, name) in _compat_pickle.NAME_MAPPING:
                module, name = _compat_pickle.NAME_MAPPING[(module, name)]
            elif module in _compat_pickle.IMPORT_MAPPING:
                module = _compat_pickle.IMPORT_MAPPING[module]
        if (module, name) == ("copyreg", "_reconstructor"):
            return _reconstructor
        if (module, name) in _SAFE_GLOBALS:
            return super().find_class(module, name)
        dtype = _torch_dtype(module, name)
        if dtype is not None:
            return dtype
        if _own(module) and "." not in name:
            obj = getattr(importlib.import_module(module), name, None)
            if isinstance(obj, type) and (dataclasses.is_dataclass(obj) or issubclass(obj, (Enum, BaseException))):
                return obj
            if isinstance(obj, type) and issubclass(obj, tuple) and hasattr(obj, "_fields"):  # NamedTuple
                return obj
        raise pickle.UnpicklingError(f"a child's reply may not contain {module}.{name}")


def loads(data: bytes) -> Any:
    """Unpickle a reply from an untrusted child (raises pickle.UnpicklingError on anything but data)."""
    return _Unpickler(io.BytesIO(data)).load()
