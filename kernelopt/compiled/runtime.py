"""Running a captured output module with some kernels replaced.

This file depends on torch alone and is copied verbatim into every
`optimized_module.py` artifact, so the artifact runs without KernelOPT
installed. Keep it small and self-contained.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import types

import torch


def kernel_cache_dir() -> str:
    path = os.environ.get("KERNELOPT_KERNEL_CACHE") or os.path.join(
        tempfile.gettempdir(), f"kernelopt_kernels_{os.getuid() if hasattr(os, 'getuid') else 0}"
    )
    os.makedirs(path, exist_ok=True)
    return path


def _holds(path: str, source: str) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(len(source) + 1) == source
    except OSError:
        return False


def load_kernel_module(source: str, name: str = "candidate") -> types.ModuleType:
    """Import a candidate kernel's source; it must define `run(*args, stream=None)`.

    Written to a content-addressed file because `triton.jit` reads its function's
    source back through `inspect`.
    """
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    mod_name = f"kernelopt_kernel_{name}_{digest}"
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    path = os.path.join(kernel_cache_dir(), mod_name + ".py")
    # rewritten unless it holds this very source: the cache may be kept from an earlier job
    # (isolation.compile_cache), and a file is never trusted for the name it has
    if not _holds(path, source):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:  # never for a .py path: the source file loader
        raise ImportError(f"kernel {name}: no loader for {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = mod
    try:
        spec.loader.exec_module(mod)
        if not callable(getattr(mod, "run", None)):
            raise ValueError(f"kernel {name}: the source defines no run(*args, stream=None)")
    except BaseException:
        del sys.modules[mod_name]  # a later load of the same source must fail the same way
        raise
    return mod


_counter = [0]


def load_output_module(source: str, filename: str, constants: dict, device,
                       replacements: dict | None = None,
                       kernel_configs: dict | None = None) -> types.ModuleType:
    """Execute Inductor's output module source; swap in replacement kernels by name.

    `call` looks kernel names up in the module's globals at call time, so
    assigning a global replaces that kernel's launches. `kernel_configs` pins
    each Inductor kernel to the launch config chosen at compile time.
    """
    _counter[0] += 1
    mod = types.ModuleType(f"kernelopt_output_module_{_counter[0]}")
    mod.__file__ = filename
    # Compile the module's kernels in this process (from Triton's disk cache after
    # the first time): a pool of compile workers would cost more to start than it
    # saves, and would run beside any timing this process does.
    from torch._inductor import config as inductor_config

    with inductor_config.patch(compile_threads=1):
        exec(compile(source, filename, "exec"), mod.__dict__)
    for key, value in constants.items():
        setattr(mod, key, value.to(device))
    pin_kernel_configs(mod, kernel_configs or {})
    for kernel_name, kernel_source in (replacements or {}).items():
        if kernel_name not in mod.__dict__:
            raise KeyError(f"the output module has no kernel {kernel_name}")
        setattr(mod, kernel_name, bind_candidate(load_kernel_module(kernel_source, kernel_name), mod))
    return mod


def bind_candidate(kernel_module: types.ModuleType, output_module: types.ModuleType):
    """What the module launches: `kernel_module.bind(output_module)` where the candidate
    defines `bind` (a library-group candidate reaching Inductor's own kernels), else
    the candidate module itself."""
    bind = getattr(kernel_module, "bind", None)
    return bind(output_module) if callable(bind) else kernel_module


def chosen_kernel_configs(module_globals: dict) -> dict:
    """The launch config each tuned Inductor kernel settled on, as plain data."""
    out = {}
    for name, obj in module_globals.items():
        launchers = getattr(obj, "launchers", None)
        if name.startswith("triton_") and launchers and len(launchers) == 1:
            cfg = launchers[0].config
            out[name] = {"kwargs": dict(cfg.kwargs), "num_warps": cfg.num_warps,
                         "num_stages": cfg.num_stages}
    return out


def _config_key(cfg) -> tuple:
    return (sorted(cfg.kwargs.items()), cfg.num_warps, cfg.num_stages)


def pin_kernel_configs(mod: types.ModuleType, configs: dict) -> None:
    """Launch each Inductor kernel with the config it was compiled and tuned to.

    Inductor autotunes reductions at their first launch and refines the winner
    by coordinate descent; a re-executed module would tune again and could
    settle elsewhere: another reduction order (other bits) and another time.
    Pinning makes the re-stitched baseline the compiled model, bit for bit.
    """
    import triton

    for name, c in configs.items():
        kernel = getattr(mod, name, None)
        if kernel is None or not hasattr(kernel, "compile_results"):
            continue  # replaced by a candidate, or not an Inductor kernel
        want = (sorted(c["kwargs"].items()), c["num_warps"], c["num_stages"])
        match = [r for r in kernel.compile_results if _config_key(r.config) == want]
        if match:
            result = match[0]
        else:  # a config found by coordinate descent: compile it now
            cfg = triton.Config(dict(c["kwargs"]), num_warps=c["num_warps"], num_stages=c["num_stages"])
            result = kernel._precompile_config(cfg)
        result.config.found_by_coordesc = True
        kernel.compile_results = [result]
        kernel.launchers = []
        kernel._make_launchers()


def flat_args(arg_specs: list, model, inputs: list, consts: list, device) -> list:
    """The flat argument list of `call`, from the model's real state and the inputs.

    `arg_specs` holds (kind, ref, shape, stride, dtype) per argument.
    """
    out = []
    for kind, ref, shape, stride, dtype in arg_specs:
        if kind == "param":
            t = model.get_parameter(ref)
        elif kind == "buffer":
            t = model.get_buffer(ref)
        elif kind == "input":
            t = inputs[int(ref)]
        else:
            t = consts[int(ref)].to(device)
        if list(t.shape) != list(shape) or str(t.dtype).removeprefix("torch.") != dtype:
            raise ValueError(
                f"argument {kind} {ref}: expected shape {list(shape)} {dtype}, "
                f"got {list(t.shape)} {str(t.dtype).removeprefix('torch.')}"
            )
        if list(t.stride()) != list(stride):
            t = torch.empty_strided(shape, stride, dtype=t.dtype, device=t.device).copy_(t)
        out.append(t.detach())
    return out


def call_module(mod: types.ModuleType, args: list) -> list:
    """`call` clears the list it is given: pass a copy, get the outputs as a list."""
    with torch.no_grad():
        return list(mod.call(list(args)))


def model_outputs(call_outputs: list, output_map: list, out_spec: str):
    from torch.utils._pytree import tree_unflatten, treespec_loads

    return tree_unflatten([call_outputs[i] for i in output_map], treespec_loads(out_spec))
