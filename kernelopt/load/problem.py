"""Importing problem files and building their model and inputs.

Two conventions are accepted:
- model files (KernelBench): `class Model(nn.Module)`, `get_inputs()`, `get_init_inputs()`;
- kernel files: a Triton launcher `launch(*inputs)`, a PyTorch `reference(*inputs)`
  and `get_inputs()`; the launcher returns the outputs.

These helpers run only inside child processes (see `isolation`): they execute
submitted code.
"""
from __future__ import annotations

import hashlib
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any, Callable

MODEL_SEED = 42


class ProblemError(Exception):
    """The submission does not follow its convention or fails to run.

    It crosses the sandbox as itself (isolation.entry), so the job reads its message, not a string.
    """

    crosses_sandbox = True


class UnsupportedGraph(Exception):
    """A valid model whose compiled form the engine cannot optimize (graph breaks, several graphs).

    Not the submission's fault: the job falls back to the compiler's own code with `code` as the cause.
    """

    crosses_sandbox = True

    def __init__(self, code: str, reason: str):
        super().__init__(code, reason)
        self.code, self.reason = code, reason

    def __str__(self) -> str:
        return f"{self.code}: {self.reason}"


class DeviceUnusable(Exception):
    """CUDA refused a process of the job where the device has memory to give: the service's fault, not the
    submission's. The job ends `fallback` with cause `harness-error` (the model itself is kept).

    It crosses the sandbox as itself (isolation.entry)."""

    crosses_sandbox = True


def device_fault(exc: BaseException, device: str,
                 probe: Callable[[], tuple[int, int]] | None = None) -> str | None:
    """Why `exc`, raised by the submission's code on `device`, is the device's or the service's fault and not the
    submission's; None where it may be the submission's.

    PyTorch's allocator refusing a request (torch.OutOfMemoryError, "Tried to allocate ...") is the submission's:
    its tensors do not fit. The driver refusing ("CUDA error: out of memory" from CUDA itself) while the device
    cannot even report its free memory is not: on an H100 every GPU child of a benched job failed so when it
    inherited its orchestrator's 16 GiB address-space limit, and each job blamed get_inputs() (2026-12-07).
    `probe`: returns (free, total) bytes (torch.cuda.mem_get_info by default)."""
    import torch

    if not device.startswith("cuda") or isinstance(exc, torch.OutOfMemoryError) or "out of memory" not in str(exc):
        return None
    try:
        free, total = (probe or torch.cuda.mem_get_info)()
    except Exception as probe_exc:  # noqa: BLE001 - any failure here says CUDA itself is unusable
        why = str(probe_exc).strip().splitlines()[0] if str(probe_exc).strip() else type(probe_exc).__name__
        return (f"CUDA refused this job's process ({type(exc).__name__}: {str(exc).splitlines()[0]}) and cannot "
                f"report the device's free memory ({why}): the service's environment, not the submission")
    return None if free < total / 2 else (
        f"CUDA refused an allocation ({type(exc).__name__}: {str(exc).splitlines()[0]}) with {free / 2**30:.1f} of "
        f"{total / 2**30:.1f} GiB of the device free: the service's environment, not the submission")


#: the largest problem file parsed: Python's syntax tree takes ~400x the source's size in memory (a 12 MB upload
#: once grew a job's orchestrator to 4.9 GB); a model or kernel definition is a few KB (weights are a separate file)
MAX_SOURCE_BYTES = 1 << 20


def parse_python(path: str | Path):
    """The file's syntax tree (parsed, never run); ProblemError if it is not Python source."""
    import ast

    name = Path(path).name
    try:
        size = Path(path).stat().st_size
        if size > MAX_SOURCE_BYTES:
            raise ProblemError(f"{name} is {size / (1 << 20):.1f} MiB: a problem file may hold at most "
                               f"{MAX_SOURCE_BYTES >> 20} MiB of Python source (weights go in a separate "
                               "safetensors file)")
        text = Path(path).read_text()
    except UnicodeDecodeError:
        raise ProblemError(f"{name} is not a Python file (not UTF-8 text)") from None
    except OSError as exc:
        raise ProblemError(f"{name} cannot be read: {exc.strerror or exc}") from None
    try:
        return ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise ProblemError(f"{name} does not parse as Python: {exc.msg} (line {exc.lineno})") from None
    except ValueError as exc:  # e.g. null bytes
        raise ProblemError(f"{name} is not a Python file ({exc})") from None


def problem_kind(path: str | Path) -> str:
    """'model' or 'kernel', decided from the names the file defines at top level."""
    import ast

    tree = parse_python(path)
    names = {
        n.name
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
    }
    names |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    if "Model" in names:
        return "model"
    if {"launch", "reference"} <= names:
        return "kernel"
    raise ProblemError(
        f"{Path(path).name} defines neither `class Model` (model file) nor "
        "`launch` and `reference` (kernel file)"
    )


def source_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _installed_library_at_fault(exc: BaseException) -> str:
    """"helion 1.5.1 (with torch 2.11.0) raised " where an ImportError came from inside an installed package, not
    from the file: a library that does not import with this torch (helion 1.5.1 on torch 2.11) is the environment's
    fault, and the user needs its name and version, not only the error's last line."""
    import importlib.metadata

    if not isinstance(exc, ImportError):
        return ""
    tb, package = exc.__traceback__, None
    while tb is not None and package is None:  # the outermost: the package the file imported
        parts = Path(tb.tb_frame.f_code.co_filename).parts
        for marker in ("site-packages", "dist-packages"):
            if marker in parts and parts.index(marker) + 1 < len(parts):
                package = parts[parts.index(marker) + 1].removesuffix(".py")
        tb = tb.tb_next
    if package is None:
        return ""
    try:
        version = f" {importlib.metadata.version(package)}"
    except (importlib.metadata.PackageNotFoundError, ValueError):
        version = ""
    torch = sys.modules.get("torch")
    with_torch = f" (with torch {torch.__version__})" if torch is not None and package != "torch" else ""
    return f"{package}{version}{with_torch} raised "


def import_problem(path: str | Path, module_name: str = "kernelopt_problem") -> types.ModuleType:
    """Import a problem file under a fixed module name; errors become ProblemError."""
    path = Path(path)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ProblemError(f"cannot import {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = mod  # triton.jit needs the module importable by name
    try:
        spec.loader.exec_module(mod)
    except BaseException as exc:  # noqa: BLE001 - SystemExit from a submission too
        raise ProblemError(f"{path.name} failed to import: {_installed_library_at_fault(exc)}"
                           f"{type(exc).__name__}: {exc}") from exc
    return mod


def _require(mod: types.ModuleType, name: str, path_name: str) -> Any:
    obj = getattr(mod, name, None)
    if obj is None:
        raise ProblemError(f"{path_name} has no `{name}`")
    return obj


def _to_device(x: Any, device: str, dtype) -> Any:
    import torch

    if isinstance(x, torch.Tensor):
        if x.is_floating_point():
            return x.to(device=device, dtype=dtype)
        return x.to(device=device)
    return x


def make_inputs(mod: types.ModuleType, seed: int, device: str, dtype) -> list:
    """`get_inputs()` under `seed`, moved to `device`, floats cast to `dtype`."""
    import torch

    get_inputs = _require(mod, "get_inputs", mod.__name__)
    torch.manual_seed(seed)
    try:
        # Made on the device: drawing 10^8 random numbers on the CPU costs seconds
        # per seed, and every stage child draws its own.
        with torch.device(device):
            inputs = get_inputs()
    except Exception as exc:
        fault = device_fault(exc, device)
        if fault:
            raise DeviceUnusable(f"get_inputs() could not run: {fault}") from exc
        raise ProblemError(f"get_inputs() raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(inputs, (list, tuple)):
        raise ProblemError(f"get_inputs() must return a list, got {type(inputs).__name__}")
    if not any(isinstance(x, torch.Tensor) for x in inputs):
        raise ProblemError("get_inputs() returned no tensors")
    return [_to_device(x, device, dtype) for x in inputs]


def build_model(mod: types.ModuleType, device: str, dtype, seed: int = MODEL_SEED,
                weights: str | Path | None = None):
    """`Model(*get_init_inputs())` built under `seed`, on `device` in `dtype`.

    With `weights` (a safetensors file), its tensors are loaded into the model
    (strict: every parameter and buffer must be there, with the right shapes).
    """
    import torch

    model_cls = _require(mod, "Model", "the model file")
    get_init: Callable[[], Any] = getattr(mod, "get_init_inputs", lambda: [])
    torch.manual_seed(seed)
    try:
        with torch.device(device):  # parameters initialised where they will live (see make_inputs)
            model = model_cls(*get_init())
    except Exception as exc:
        raise ProblemError(f"Model(*get_init_inputs()) raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(model, torch.nn.Module):
        raise ProblemError("Model is not an nn.Module")
    if weights is not None:
        load_weights(model, weights)
    return model.to(device=device, dtype=dtype)


def load_weights(model, path: str | Path) -> None:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        state = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise ProblemError(f"the weights file is not a readable safetensors file: {exc}") from exc
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise ProblemError(f"the weights do not fit the model: {exc}") from exc


def output_leaves(out: Any) -> list:
    """Flatten a model output into its tensor leaves; anything else is an error."""
    import torch
    from torch.utils._pytree import tree_flatten

    leaves, _ = tree_flatten(out)
    if not leaves or not all(isinstance(x, torch.Tensor) for x in leaves):
        kinds = sorted({type(x).__name__ for x in leaves})
        raise ProblemError(f"the output must be tensors (or a tuple of tensors), got {kinds or 'nothing'}")
    return leaves


def dtype_from_name(name: str):
    """The torch dtype of a job's dtype name (core.tolerance.Dtype, or torch's own name)."""
    import torch

    name = getattr(name, "value", name)  # a Dtype member: its value (a str enum hashes by its member name)

    table = {"fp32": torch.float32, "float32": torch.float32, "bf16": torch.bfloat16,
             "bfloat16": torch.bfloat16, "fp16": torch.float16, "float16": torch.float16,
             "fp64": torch.float64, "float64": torch.float64}
    if name not in table:
        raise ProblemError(f"unknown dtype {name!r}; use one of fp32, bf16, fp16")
    return table[name]
