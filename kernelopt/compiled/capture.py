"""Stage 2: compile with Inductor (max-autotune, no CUDA graphs) and capture its output.

A custom backend wraps `compile_fx` with an `inner_compile` that records the exact
flat argument list Inductor's graph receives (parameters lifted as inputs, in
Inductor's order) and the outputs it returns. Recording `save_output_code`
gives the module's source on a cache hit as well as on a fresh compile.
Runs in a child process (it executes the submission).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from kernelopt.compiled import runtime
from kernelopt.compiled.autotune_log import AUTOTUNE_FILE, AutotuneTee
from kernelopt.compiled.compile_pool import announce, start_compile_pool
from kernelopt.compiled.graph import (
    MODULE_FILE,
    TENSORS_FILE,
    ArgSpec,
    CapturedGraph,
    Reproduction,
    reduced_precision_reduction_mode,
)
from kernelopt.core.text import clip
from kernelopt.core.timing import bench_interleaved
from kernelopt.load.problem import (
    ProblemError,
    UnsupportedGraph,
    build_model,
    dtype_from_name,
    import_problem,
    make_inputs,
    output_leaves,
)

if TYPE_CHECKING:
    import torch

COMPILE_MODE = "max-autotune-no-cudagraphs"


@dataclass
class CaptureRequest:
    problem_path: str
    workdir: str
    dtype: str = "fp32"
    device: str = "cuda"
    input_seed: int = 0
    weights: str | None = None  # safetensors file loaded into the model
    context_timing: bool = True  # time eager and torch.compile for the report's context
    # Inductor options over the baseline's (compiled/variants.py: a whole-model candidate compiled otherwise)
    inductor_options: dict = field(default_factory=dict)


#: rewrites the ATen graph Inductor is about to compile, in place (rewrite/stage.py); it may raise to stop the
#: capture before any compilation (nothing to rewrite)
GraphTransform = Callable[["torch.fx.GraphModule"], None]


class TransformStopped(Exception):
    """Raised by a GraphTransform to end the capture before compiling; carries what the transform found."""

    def __init__(self, payload: object):
        super().__init__("the graph transform stopped the capture")
        self.payload = payload


def inductor_mode_options() -> dict:
    import torch._inductor

    opts = dict(torch._inductor.list_mode_options(COMPILE_MODE))
    opts["triton.cudagraphs"] = False
    return opts


def capture_model(req: CaptureRequest, transform: GraphTransform | None = None) -> CapturedGraph:
    import torch
    import triton
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner
    from torch._inductor.graph import GraphLowering
    from torch.utils._pytree import tree_flatten, treespec_dumps

    workdir = Path(req.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    dtype = dtype_from_name(req.dtype)
    mod = import_problem(req.problem_path)
    model = build_model(mod, req.device, dtype, weights=req.weights)
    inputs = make_inputs(mod, req.input_seed, req.device, dtype)

    graphs: list[dict] = []
    sources: list[str] = []

    def inner(gm, example_inputs, **kw):
        if transform is not None:
            transform(gm)
        first = len(sources)
        compiled = compile_fx_inner(gm, example_inputs, **kw)
        # Autotuning (split-K variants, benchmark subgraphs) lowers and saves modules of its own
        # while this graph compiles: the graph's module is the one its compiled object holds.
        record = {"static": set(kw.get("static_input_idxs") or ()), "compiled": compiled,
                  "source": output_module_source(compiled, sources[first:])}
        graphs.append(record)

        def run(args):
            if "args" not in record:
                record["args"] = list(args)
            out = compiled(args)
            if "outputs" not in record:
                record["outputs"] = list(out)
            return out

        run._boxed_call = True
        return run

    opts = {**inductor_mode_options(), **req.inductor_options}

    def backend(gm, example_inputs):
        return compile_fx(gm, example_inputs, inner_compile=inner, config_patches=opts)

    original_save = GraphLowering.save_output_code

    def save_output_code(code: str):
        sources.append(code)
        if original_save is not None:
            return original_save(code)

    torch._dynamo.reset()
    pool = None
    if req.device.startswith("cuda"):  # Triton's compiles are what the pool parallelizes
        pool = start_compile_pool()
        announce(pool)
    t0 = time.perf_counter()
    GraphLowering.save_output_code = staticmethod(save_output_code)
    try:
        # An AOTAutograd cache hit would skip inner_compile and so the capture. Nor is a whole compiled graph
        # taken from Inductor's FX graph cache: on a GPU its entries pickle kernel objects holding the absolute
        # paths they were compiled at (CachingAutotuner.filename), which a later job does not have
        # (isolation.compile_cache keeps a job's caches for the next one; on an H100 a capture from them failed
        # with a PermissionError on the first job's directory, most likely from these). The caches that cost the
        # time stay: autotune timings and compiled kernels.
        with torch.no_grad(), torch._functorch.config.patch(enable_autograd_cache=False), \
                torch._inductor.config.patch(fx_graph_cache=False), AutotuneTee(workdir / AUTOTUNE_FILE) as tee:
            compiled_model = torch.compile(model, backend=backend, fullgraph=True, dynamic=False)
            try:
                result = compiled_model(*inputs)
            except TransformStopped:
                raise
            except torch._dynamo.exc.Unsupported as exc:
                raise UnsupportedGraph("graph-break", f"the model does not compile to one graph "
                                       f"({clip(str(exc).splitlines()[0], 300)}); the compiler's own code is kept") from exc
            except Exception as exc:
                stopped = _transform_stopped(exc)
                if stopped is not None:  # Dynamo wraps what a backend raises
                    raise stopped from None
                raise ProblemError(f"torch.compile failed: {type(exc).__name__}: {exc}") from exc
    finally:
        GraphLowering.save_output_code = original_save
    compile_seconds = time.perf_counter() - t0

    if len(graphs) != 1:
        raise UnsupportedGraph("several-graphs", f"the model compiled to {len(graphs)} graphs; only single-graph "
                               "models are optimized, the compiler's own code is kept")
    g = graphs[0]
    if g["source"] is None:
        raise UnsupportedGraph("no-output-module", f"none of the {len(sources)} modules Inductor generated is the "
                               "graph's own; the compiler's own code is kept")
    source = g["source"]
    leaves, spec = tree_flatten(result)
    output_leaves(result)

    named = {}
    for name, p in model.named_parameters():
        named[_key(p)] = ("param", name)
    for name, b in model.named_buffers():
        named.setdefault(_key(b), ("buffer", name))
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            named.setdefault(_key(x), ("input", str(i)))

    specs: list[ArgSpec] = []
    const_values: list = []
    for a in g["args"]:
        if not isinstance(a, torch.Tensor):
            raise ProblemError(f"non-tensor graph input {a!r} (dynamic shapes are not supported)")
        kind, ref = named.get(_key(a), ("const", str(len(const_values))))
        if kind == "const":
            const_values.append(a.detach().cpu().clone())
        specs.append(ArgSpec(kind, ref, list(a.shape), list(a.stride()), str(a.dtype).removeprefix("torch.")))

    out_keys = [_key(o) if isinstance(o, torch.Tensor) else None for o in g["outputs"]]
    output_map = []
    for leaf in leaves:
        try:
            output_map.append(out_keys.index(_key(leaf)))
        except ValueError:
            raise ProblemError(
                "a model output is not one of the compiled graph's outputs "
                "(an aliased or regenerated view); not supported"
            ) from None

    module_globals = _module_globals(g["compiled"], source)
    module_constants = {k: v.detach().cpu().clone() for k, v in module_globals.items()
                        if isinstance(v, torch.Tensor)}

    module_path = workdir / MODULE_FILE
    module_path.write_text(source)
    torch.save({"consts": const_values, "module_constants": module_constants}, workdir / TENSORS_FILE)
    kernel_configs = runtime.chosen_kernel_configs(module_globals)
    mod_out = runtime.load_output_module(source, str(module_path), module_constants, req.device,
                                         kernel_configs=kernel_configs)
    bit_exact, restitch_diff = _restitch_reproduces(mod_out, g["args"], output_map, leaves)
    reproduction, spread = Reproduction.BIT_EXACT, None
    if not bit_exact:
        reproduction, spread = _seeded_reproduction(lambda: compiled_model(*inputs),
                                                    lambda: [runtime.call_module(mod_out, g["args"])[i]
                                                             for i in output_map])
    context_ms = {}
    if req.device.startswith("cuda") and req.context_timing:
        with torch.no_grad():
            timing = bench_interleaved({"eager": lambda: model(*inputs),
                                        "torch.compile": lambda: compiled_model(*inputs)}, rounds=3)
        context_ms = dict(timing.median_ms)
    cg = CapturedGraph(
        module_path=str(module_path),
        args=specs,
        output_map=output_map,
        out_spec=treespec_dumps(spec),
        module_constants=sorted(module_constants),
        kernel_configs=kernel_configs,
        torch_version=torch.__version__,
        triton_version=triton.__version__,
        device_name=torch.cuda.get_device_name() if req.device.startswith("cuda") else req.device,
        compile_seconds=round(compile_seconds, 2),
        compile_pool=pool.to_dict() if pool is not None else {},
        autotune=tee.summary().to_dict(),
        mode_options={k: v for k, v in opts.items() if isinstance(v, (bool, int, float, str))},
        restitch_bit_exact=bit_exact,
        restitch_max_abs_diff=restitch_diff,
        library_math=library_math_modes(),
        reproduction=reproduction.value,
        nondeterminism_max_abs_diff=spread,
        context_ms=context_ms,
    )
    cg.save(workdir)
    return cg


def _transform_stopped(exc: BaseException) -> TransformStopped | None:
    seen = 0
    cur: BaseException | None = exc
    while cur is not None and seen < 8:
        if isinstance(cur, TransformStopped):
            return cur
        cur = getattr(cur, "inner_exception", None) or cur.__cause__
        seen += 1
    return None


def library_math_modes() -> dict:
    """The process's math modes for library calls, as the baseline ran them.

    PyTorch's defaults differ: cuBLAS GEMMs in IEEE fp32 (`matmul.allow_tf32` False) but
    cuDNN convolutions in TF32 (`cudnn.allow_tf32` True), so a baseline's convolutions may
    already compute in TF32; the report states it.
    A bf16/fp16 job's GEMMs obey another flag: whether cuBLAS may reduce in the data's precision
    (`allow_bf16/fp16_reduced_precision_reduction`, True by default), recorded too.
    """
    import torch

    matmul = torch.backends.cuda.matmul
    modes = {"cuda.matmul.allow_tf32": bool(matmul.allow_tf32),
             "cudnn.allow_tf32": bool(torch.backends.cudnn.allow_tf32),
             "float32_matmul_precision": torch.get_float32_matmul_precision()}
    for low in ("bf16", "fp16"):
        key = reduced_precision_reduction_mode(low)
        flag = getattr(matmul, key.removeprefix("cuda.matmul."), None)
        if flag is not None:  # newer torch may hold (allow, allow_splitk): the first says whether at all
            modes[key] = bool(flag[0] if isinstance(flag, tuple) else flag)
    return modes


def _key(t) -> tuple:
    """Identity of a tensor view: same memory, same geometry."""
    return (t.data_ptr(), tuple(t.shape), tuple(t.stride()), t.dtype)


def output_module_source(compiled, saved: list[str]) -> str | None:
    """The output module of one compiled graph among the modules saved while it compiled.

    The compiled graph keeps its own source (`source_code`); without it, the last
    saved module that defines `call` (autotuning's subgraph modules are saved first).
    """
    own = getattr(compiled, "source_code", None)
    if isinstance(own, str) and own:
        return own
    calls = [s for s in saved if "\ndef call(" in s]
    return calls[-1] if calls else None


def _module_globals(compiled, source: str) -> dict:
    """Globals of the output module Inductor loaded and ran (its tuned kernel objects).

    Found in PyCodeCache by its source text: `current_callable` may be a wrapper
    (input alignment) whose globals belong to another module.
    """
    from torch._inductor.codecache import PyCodeCache

    loaded = list(getattr(PyCodeCache, "modules", []) or [])
    loaded += list((getattr(PyCodeCache, "modules_no_attr", {}) or {}).values())
    for m in reversed(loaded):
        path = getattr(m, "__file__", None)
        try:
            if path and Path(path).read_text() == source:
                return dict(m.__dict__)
        except OSError:
            continue
    fn = getattr(compiled, "current_callable", None)
    fn = getattr(fn, "__func__", fn)
    found = dict(getattr(fn, "__globals__", {}) or {})
    if "call" not in found:
        raise ProblemError("could not find Inductor's loaded output module to read its kernel configs")
    return found


def _max_abs_diff(got: list, expected: list) -> float:
    import torch

    if len(got) != len(expected):
        return float("inf")
    diffs = []
    for a, b in zip(got, expected, strict=True):
        if not isinstance(a, torch.Tensor) or a.shape != b.shape:
            return float("inf")
        if a.numel():
            d = (a.double() - b.double()).abs()
            same = (a == b) | (a.isnan() & b.isnan()) if a.is_floating_point() else a == b
            diffs.append(float(torch.where(same, torch.zeros_like(d), d).nan_to_num(nan=float("inf")).max()))
    return max(diffs, default=0.0)


def _restitch_reproduces(mod, args: list, output_map: list, expected: list) -> tuple[bool, float]:
    """Re-execute the saved source (nothing replaced); (bit for bit equal, max abs difference)."""
    import torch

    outs = runtime.call_module(mod, args)
    got = [outs[i] for i in output_map]
    exact = len(got) == len(expected) and all(torch.equal(a, b) for a, b in zip(got, expected, strict=True))
    return exact, _max_abs_diff(got, expected)


# Seeded runs of the compiled model (the first is the reference) and of the re-executed module.
COMPILED_RUNS, MODULE_RUNS = 4, 3
# The module's difference may exceed the largest spread seen in a few runs of the compiled
# model by this factor: a maximum over few samples underestimates the range of the spread.
SPREAD_GUARD = 2.0


def _seeded_reproduction(compiled_run, module_run) -> tuple[Reproduction, float]:
    """Why the module did not reproduce the first compiled output bit for bit, measured.

    Both are run again from the same RNG seed: a model drawing random numbers is then
    reproduced bit for bit. Otherwise the compiled model itself is run several times: if
    its outputs differ among themselves (a non-deterministic library algorithm, atomics),
    the module is the compiled model when its difference stays within that spread
    (times SPREAD_GUARD). Returns (verdict, the compiled model's own max |Δ|).
    """
    import torch

    def seeded(run) -> list:
        torch.manual_seed(0)
        with torch.no_grad():
            return [t.clone() for t in output_leaves(run())]

    ref = seeded(compiled_run)
    spread = max((_max_abs_diff(seeded(compiled_run), ref) for _ in range(COMPILED_RUNS - 1)), default=0.0)
    module_diff = max(_max_abs_diff(seeded(module_run), ref) for _ in range(MODULE_RUNS))
    if module_diff == 0.0:
        return Reproduction.BIT_EXACT, spread
    if 0.0 < spread < float("inf") and module_diff <= SPREAD_GUARD * spread:
        return Reproduction.WITHIN_NONDETERMINISM, spread
    return Reproduction.NO, spread
