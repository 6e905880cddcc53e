"""Decoding what a sandboxed child sends back, without letting it run code in the parent.

A child runs submitted code, so its reply is attacker-controlled bytes. Plain
`pickle.loads` would call any function the bytes name; this unpickler resolves
only plain data: builtin containers and scalars, and, from KernelOPT's own
packages, classes that are dataclasses, enums or exceptions (their pickles
rebuild state, they call no function of ours). Tensors never cross this way
(their unpickling goes through `torch.load`); stages return them as files.
"""
from __future__ import annotations

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


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
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
