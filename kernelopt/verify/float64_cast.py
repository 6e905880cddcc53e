"""A model cast to float64 in place, with everything its forward can reach (Gate 3's float64 reference).

`copy.deepcopy(model).to(torch.float64)` casts only what the module tree registers. Python code reaches
more: minGPT writes its MLP as `self.mlpf = lambda x: m.dropout(m.c_proj(m.act(m.c_fc(x))))`, and deepcopy
copies the modules but not the lambda (functions are copied by reference), so the "float64" copy calls the
float32 originals through the closure ("mat1 and mat2 must have the same dtype"). A module kept in a plain
list and a tensor kept as a plain attribute are missed the same way.

`cast_float64` walks the object graph from the model instance instead: module `__dict__`s, containers,
closure cells, default arguments, the `__self__` of bound methods, `functools.partial`'s arguments. Modules
are cast with `.to(torch.float64)` in place; floating-point tensors held outside a module's registered
parameters and buffers are replaced by float64 copies (one per tensor: aliases stay aliases). It mutates
the model, its functions and its containers, so it runs only where the model is disposable: the reference
child (verify/model_outputs.py), after eager's fp32 outputs are written. It never walks a function's
globals, a class or a Python module, nor into torch's or the standard library's own functions and objects:
only what hangs off the model instance is changed. `default_dtype` covers tensors a forward makes itself.
"""
from __future__ import annotations

import functools
import sys
import types
from contextlib import contextmanager
from typing import Any, Iterator

import torch

# Objects of these packages are never walked into (a torch function's defaults, a stdlib object's state):
# what the model reaches through them belongs to the library, not to this model.
_LIBRARIES = frozenset({"torch", "builtins"}) | frozenset(sys.stdlib_module_names)
# what cannot hold a tensor: returned as it is, without a memo entry each
_ATOMS = (bool, int, float, complex, str, bytes, torch.dtype, torch.device)


def _library(module_name: object) -> bool:
    return isinstance(module_name, str) and module_name.split(".", 1)[0] in _LIBRARIES


@contextmanager
def default_dtype(dtype: torch.dtype) -> Iterator[None]:
    """`torch.set_default_dtype(dtype)` for the block: tensors a forward makes with the default dtype
    (`torch.ones(T, T)`, `torch.tensor(0.5)`) are then float64 too. Restored on the way out."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def float64_inputs(inputs: list) -> list:
    """A reference's inputs for its float64 pass: the floating-point tensors cast, everything else as it is."""
    return [x.to(torch.float64) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]


def cast_float64(model: torch.nn.Module) -> torch.nn.Module:
    """`model`, cast to float64 in place with every module and floating-point tensor reachable from it."""
    with torch.no_grad():
        _Caster().cast(model)
    return model


class _Caster:
    """One walk: `cast(obj)` returns what should now stand where `obj` stood (obj itself, changed in place,
    or a float64 replacement for an immutable one), each object visited once."""

    def __init__(self) -> None:
        self.done: dict[int, Any] = {}  # id -> its replacement (itself when changed in place)
        self.alive: list[Any] = []  # the originals, kept so that no id is reused during the walk

    def cast(self, obj: Any) -> Any:
        if obj is None or isinstance(obj, _ATOMS):
            return obj
        key = id(obj)
        if key in self.done:
            return self.done[key]
        self.alive.append(obj)
        self.done[key] = obj  # a cycle back to obj meets obj itself
        out = self._cast(obj)
        self.done[key] = out
        return out

    def _cast(self, obj: Any) -> Any:
        if isinstance(obj, torch.Tensor):
            return self._tensor(obj)
        if isinstance(obj, torch.nn.Module):
            obj.to(torch.float64)  # its registered parameters, buffers and submodules (in place)
            self._attributes(obj.__dict__, skip=("_parameters", "_buffers"))
            return obj
        if isinstance(obj, list):
            obj[:] = [self.cast(x) for x in obj]
            return obj
        if isinstance(obj, dict):
            for k, v in list(obj.items()):
                obj[k] = self.cast(v)
            return obj
        if isinstance(obj, tuple):
            return self._tuple(obj)
        if isinstance(obj, functools.partial):
            return self._partial(obj)
        if isinstance(obj, types.MethodType):  # a bound method: its instance (the function is its class's)
            self.cast(obj.__self__)
            return obj
        if isinstance(obj, types.BuiltinMethodType) and isinstance(obj.__self__, torch.Tensor):
            return getattr(self.cast(obj.__self__), obj.__name__)  # `self.f = t.mul`: the float64 t's method
        if isinstance(obj, types.FunctionType):
            if not _library(obj.__module__):
                self._function(obj)
            return obj
        if isinstance(obj, types.SimpleNamespace) or (
                hasattr(obj, "__dict__") and not isinstance(obj, (type, types.ModuleType))
                and not _library(type(obj).__module__)):
            self._attributes(vars(obj))  # an object of the model's own classes (a config, a holder, a functor)
        return obj

    def _tensor(self, t: torch.Tensor) -> torch.Tensor:
        if not t.is_floating_point() or t.dtype == torch.float64:
            return t
        if isinstance(t, torch.nn.Parameter):  # as Module.to casts one: same object, float64 data
            t.data = t.data.to(torch.float64)
            return t
        return t.to(torch.float64)

    def _attributes(self, attrs: dict, skip: tuple[str, ...] = ()) -> None:
        for name, value in list(attrs.items()):
            if name not in skip:
                new = self.cast(value)
                if new is not value:
                    attrs[name] = new

    def _tuple(self, obj: tuple) -> tuple:
        items = [self.cast(x) for x in obj]
        if all(a is b for a, b in zip(items, obj, strict=True)):
            return obj
        if hasattr(obj, "_fields"):  # a namedtuple
            return type(obj)(*items)
        return type(obj)(items) if type(obj) is not tuple else tuple(items)

    def _partial(self, p: functools.partial) -> functools.partial:
        func, args = self.cast(p.func), tuple(self.cast(a) for a in p.args)
        keywords = {k: self.cast(v) for k, v in p.keywords.items()}
        if func is p.func and all(a is b for a, b in zip(args, p.args, strict=True)) and all(
                keywords[k] is v for k, v in p.keywords.items()):
            return p
        return type(p)(func, *args, **keywords)  # a new one: the partial may be shared beyond the model

    def _function(self, fn: types.FunctionType) -> None:
        """A function of the model's own code: its closure cells and default arguments."""
        for cell in fn.__closure__ or ():
            try:
                value = cell.cell_contents
            except ValueError:  # a cell not yet filled
                continue
            new = self.cast(value)
            if new is not value:
                cell.cell_contents = new
        if fn.__defaults__:
            fn.__defaults__ = tuple(self.cast(v) for v in fn.__defaults__)
        if fn.__kwdefaults__:
            self._attributes(fn.__kwdefaults__)
