"""KernelOPT optimized module for 17_conv_logsumexp.py: 1 kernel(s) replaced (triton_per_fused_convolution_logsumexp_2).

Usage:
    from optimized_module import ModelNew, get_init_inputs
    model = ModelNew(*get_init_inputs()).cuda()  # same parameters as Model
"""
from __future__ import annotations
# ---- runtime (compiled/runtime.py of KernelOPT) ----
"""Running a captured output module with some kernels replaced.

This file depends on torch alone and is copied verbatim into every
`optimized_module.py` artifact, so the artifact runs without KernelOPT
installed. Keep it small and self-contained.
"""

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
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(mod_name, path)
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

# ---- what was verified ----
_OUTPUT_MODULE_SOURCE = '# AOT ID: [\'0_inference\']\nfrom ctypes import c_void_p, c_long, c_int\nimport torch\nimport math\nimport random\nimport os\nimport tempfile\nfrom math import inf, nan\nfrom cmath import nanj\nfrom torch._inductor.hooks import run_intermediate_hooks\nfrom torch._inductor.utils import maybe_profile\nfrom torch._inductor.codegen.memory_planning import _align as align\nfrom torch import device, empty_strided\nfrom torch._inductor.async_compile import AsyncCompile\nfrom torch._inductor.select_algorithm import extern_kernels\nimport triton\nimport triton.language as tl\nfrom torch._inductor.runtime.triton_heuristics import start_graph, end_graph\nfrom torch._C import _cuda_getCurrentRawStream as get_raw_stream\n\naten = torch.ops.aten\ninductor_ops = torch.ops.inductor\n_quantized = torch.ops._quantized\nassert_size_stride = torch._C._dynamo.guards.assert_size_stride\nassert_alignment = torch._C._dynamo.guards.assert_alignment\nempty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu\nempty_strided_cpu_pinned = torch._C._dynamo.guards._empty_strided_cpu_pinned\nempty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda\nempty_strided_xpu = torch._C._dynamo.guards._empty_strided_xpu\nempty_strided_mtia = torch._C._dynamo.guards._empty_strided_mtia\nreinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor\nalloc_from_pool = torch.ops.inductor._alloc_from_pool\nasync_compile = AsyncCompile()\nempty_strided_p2p = torch._C._distributed_c10d._SymmetricMemory.empty_strided_p2p\n\n\n# kernel path: /work/main/runs/convstrict2/level2/17_conv_logsumexp/.cache/inductor/rf/crfujqqmjiky6vemma2heztefvinrdwyv67b2v37i2i6ukit5azh.py\n# Topologically Sorted Source Nodes: [x], Original ATen: [aten.convolution]\n# Source node to ATen node mapping:\n#   x => convolution\n# Graph fragment:\n#   %arg2_1 : Tensor "f32[64, 64, 64, 64][262144, 4096, 64, 1]cuda:0" = PlaceHolder[target=arg2_1]\n#   %convolution : Tensor "f32[64, 128, 64, 64][524288, 4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.convolution.default](args = (%arg2_1, %arg0_1, %arg1_1, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n#   return %buf0\ntriton_poi_fused_convolution_0 = async_compile.triton(\'triton_poi_fused_convolution_0\', \'\'\'\nimport triton\nimport triton.language as tl\n\nfrom torch._inductor.runtime import triton_helpers, triton_heuristics\nfrom torch._inductor.runtime.triton_helpers import libdevice, math as tl_math\nfrom torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties\ntriton_helpers.set_driver_to_gpu()\n\n@triton_heuristics.pointwise(\n    size_hints={\'y\': 4096, \'x\': 4096}, tile_hint=TileHint.SQUARE,\n    filename=__file__,\n    triton_meta={\'signature\': {\'in_ptr0\': \'*fp32\', \'out_ptr0\': \'*fp32\', \'ynumel\': \'i32\', \'xnumel\': \'i32\', \'YBLOCK\': \'constexpr\', \'XBLOCK\': \'constexpr\'}, \'device\': DeviceProperties(type=\'cuda\', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), \'constants\': {}, \'native_matmul\': False, \'enable_fp_fusion\': True, \'launch_pdl\': False, \'disable_ftz\': False, \'configs\': [{(0,): [[\'tt.divisibility\', 16]], (1,): [[\'tt.divisibility\', 16]], (2,): [[\'tt.divisibility\', 16]], (3,): [[\'tt.divisibility\', 16]]}]},\n    inductor_meta={\'grid_type\': \'Grid2D\', \'autotune_hints\': set(), \'kernel_name\': \'triton_poi_fused_convolution_0\', \'mutated_arg_names\': [], \'optimize_mem\': True, \'no_x_dim\': False, \'atomic_add_found\': False, \'num_load\': 1, \'num_store\': 1, \'num_reduction\': 0, \'backend_hash\': \'91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336\', \'assert_indirect_indexing\': True, \'autotune_local_cache\': True, \'autotune_pointwise\': True, \'autotune_remote_cache\': None, \'force_disable_caches\': False, \'dynamic_scale_rblock\': True, \'max_autotune\': True, \'max_autotune_pointwise\': False, \'min_split_scan_rblock\': 256, \'spill_threshold\': 16, \'store_cubin\': False, \'deterministic\': False, \'force_filter_reduction_configs\': False, \'mix_order_reduction_allow_multi_stages\': False, \'are_deterministic_algorithms_enabled\': False, \'coordinate_descent_tuning\': True, \'coordinate_descent_search_radius\': 1, \'coordinate_descent_check_all_directions\': False, \'tiling_scores\': {\'y\': 134217728, \'x\': 67108864}},\n    min_elem_per_thread=0\n)\n@triton.jit\ndef triton_poi_fused_convolution_0(in_ptr0, out_ptr0, ynumel, xnumel, YBLOCK : tl.constexpr, XBLOCK : tl.constexpr):\n    ynumel = 4096\n    xnumel = 4096\n    yoffset = tl.program_id(1) * YBLOCK\n    yindex = yoffset + tl.arange(0, YBLOCK)[:, None]\n    ymask = tl.full([YBLOCK], True, tl.int1)[:, None]\n    xoffset = tl.program_id(0) * XBLOCK\n    xindex = xoffset + tl.arange(0, XBLOCK)[None, :]\n    xmask = tl.full([XBLOCK], True, tl.int1)[None, :]\n    x2 = xindex\n    y3 = yindex\n    y0 = (yindex % 64)\n    y1 = yindex // 64\n    tmp0 = tl.load(in_ptr0 + (x2 + 4096*y3), None)\n    tl.store(out_ptr0 + (y0 + 64*x2 + 262144*y1), tmp0, None)\n\'\'\', device_str=\'cuda\')\n\n\n# kernel path: /work/main/runs/convstrict2/level2/17_conv_logsumexp/.cache/inductor/rg/crgupnwnr5t7nm2eykuokc4iho62iv4jd7aym7uc73bkq2dpbu5t.py\n# Topologically Sorted Source Nodes: [x], Original ATen: [aten.convolution]\n# Source node to ATen node mapping:\n#   x => convolution\n# Graph fragment:\n#   %arg0_1 : Tensor "f32[128, 64, 3, 3][576, 9, 3, 1]cuda:0" = PlaceHolder[target=arg0_1]\n#   %convolution : Tensor "f32[64, 128, 64, 64][524288, 4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.convolution.default](args = (%arg2_1, %arg0_1, %arg1_1, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n#   return %buf1\ntriton_poi_fused_convolution_1 = async_compile.triton(\'triton_poi_fused_convolution_1\', \'\'\'\nimport triton\nimport triton.language as tl\n\nfrom torch._inductor.runtime import triton_helpers, triton_heuristics\nfrom torch._inductor.runtime.triton_helpers import libdevice, math as tl_math\nfrom torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties\ntriton_helpers.set_driver_to_gpu()\n\n@triton_heuristics.pointwise(\n    size_hints={\'y\': 8192, \'x\': 16}, tile_hint=TileHint.SQUARE,\n    filename=__file__,\n    triton_meta={\'signature\': {\'in_ptr0\': \'*fp32\', \'out_ptr0\': \'*fp32\', \'ynumel\': \'i32\', \'xnumel\': \'i32\', \'YBLOCK\': \'constexpr\', \'XBLOCK\': \'constexpr\'}, \'device\': DeviceProperties(type=\'cuda\', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), \'constants\': {}, \'native_matmul\': False, \'enable_fp_fusion\': True, \'launch_pdl\': False, \'disable_ftz\': False, \'configs\': [{(0,): [[\'tt.divisibility\', 16]], (1,): [[\'tt.divisibility\', 16]], (2,): [[\'tt.divisibility\', 16]]}]},\n    inductor_meta={\'grid_type\': \'Grid2D\', \'autotune_hints\': set(), \'kernel_name\': \'triton_poi_fused_convolution_1\', \'mutated_arg_names\': [], \'optimize_mem\': True, \'no_x_dim\': False, \'atomic_add_found\': False, \'num_load\': 1, \'num_store\': 1, \'num_reduction\': 0, \'backend_hash\': \'91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336\', \'assert_indirect_indexing\': True, \'autotune_local_cache\': True, \'autotune_pointwise\': True, \'autotune_remote_cache\': None, \'force_disable_caches\': False, \'dynamic_scale_rblock\': True, \'max_autotune\': True, \'max_autotune_pointwise\': False, \'min_split_scan_rblock\': 256, \'spill_threshold\': 16, \'store_cubin\': False, \'deterministic\': False, \'force_filter_reduction_configs\': False, \'mix_order_reduction_allow_multi_stages\': False, \'are_deterministic_algorithms_enabled\': False, \'coordinate_descent_tuning\': True, \'coordinate_descent_search_radius\': 1, \'coordinate_descent_check_all_directions\': False, \'tiling_scores\': {\'y\': 589824, \'x\': 294912}},\n    min_elem_per_thread=0\n)\n@triton.jit\ndef triton_poi_fused_convolution_1(in_ptr0, out_ptr0, ynumel, xnumel, YBLOCK : tl.constexpr, XBLOCK : tl.constexpr):\n    ynumel = 8192\n    xnumel = 9\n    yoffset = tl.program_id(1) * YBLOCK\n    yindex = yoffset + tl.arange(0, YBLOCK)[:, None]\n    ymask = tl.full([YBLOCK], True, tl.int1)[:, None]\n    xoffset = tl.program_id(0) * XBLOCK\n    xindex = xoffset + tl.arange(0, XBLOCK)[None, :]\n    xmask = xindex < xnumel\n    x2 = xindex\n    y3 = yindex\n    y0 = (yindex % 64)\n    y1 = yindex // 64\n    tmp0 = tl.load(in_ptr0 + (x2 + 9*y3), xmask, eviction_policy=\'evict_last\')\n    tl.store(out_ptr0 + (y0 + 64*x2 + 576*y1), tmp0, xmask)\n\'\'\', device_str=\'cuda\')\n\n\n# kernel path: /work/main/runs/convstrict2/level2/17_conv_logsumexp/.cache/inductor/ib/cib3sjixgrktq75xiap2ets5zjjjfsurqtncikxzocn4w3zkfaro.py\n# Topologically Sorted Source Nodes: [x, logsumexp], Original ATen: [aten.convolution, aten.logsumexp]\n# Source node to ATen node mapping:\n#   logsumexp => abs_1, add, amax, eq, exp, full_default, log, sub, sum_1, where\n#   x => convolution\n# Graph fragment:\n#   %buf2 : Tensor "f32[64, 128, 64, 64][524288, 1, 8192, 128]cuda:0" = PlaceHolder[target=buf2]\n#   %arg1_1 : Tensor "f32[128][1]cuda:0" = PlaceHolder[target=arg1_1]\n#   %amax : Tensor "f32[64, 1, 64, 64][4096, 262144, 64, 1]cuda:0" = PlaceHolder[target=amax]\n#   %sum_1 : Tensor "f32[64, 1, 64, 64][4096, 262144, 64, 1]cuda:0" = PlaceHolder[target=sum_1]\n#   %convolution : Tensor "f32[64, 128, 64, 64][524288, 4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.convolution.default](args = (%arg2_1, %arg0_1, %arg1_1, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n#   %amax : Tensor "f32[64, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.amax.default](args = (%convolution, [1], True), kwargs = {})\n#   %abs_1 : Tensor "f32[64, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.abs.default](args = (%amax,), kwargs = {})\n#   %eq : Tensor "b8[64, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.eq.Scalar](args = (%abs_1, inf), kwargs = {})\n#   %full_default : Tensor "f32[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([], 0.0), kwargs = {dtype: torch.float32, layout: torch.strided, device: cuda:0, pin_memory: False})\n#   %where : Tensor "f32[64, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.where.self](args = (%eq, %full_default, %amax), kwargs = {})\n#   %sub : Tensor "f32[64, 128, 64, 64][524288, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%convolution, %where), kwargs = {})\n#   %exp : Tensor "f32[64, 128, 64, 64][524288, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.exp.default](args = (%sub,), kwargs = {})\n#   %sum_1 : Tensor "f32[64, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%exp, [1], True), kwargs = {})\n#   %log : Tensor "f32[64, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.log.default](args = (%sum_1,), kwargs = {})\n#   %add : Tensor "f32[64, 1, 64, 64][4096, 4096, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%log, %where), kwargs = {})\n#   return %amax,%sum_1,%add\ntriton_per_fused_convolution_logsumexp_2 = async_compile.triton(\'triton_per_fused_convolution_logsumexp_2\', \'\'\'\nimport triton\nimport triton.language as tl\n\nfrom torch._inductor.runtime import triton_helpers, triton_heuristics\nfrom torch._inductor.runtime.triton_helpers import libdevice, math as tl_math\nfrom torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties\ntriton_helpers.set_driver_to_gpu()\n\n@triton_heuristics.persistent_reduction(\n    size_hints={\'x\': 262144, \'r0_\': 128},\n    reduction_hint=ReductionHint.INNER,\n    filename=__file__,\n    triton_meta={\'signature\': {\'in_out_ptr0\': \'*fp32\', \'in_ptr0\': \'*fp32\', \'in_ptr1\': \'*fp32\', \'xnumel\': \'i32\', \'r0_numel\': \'i32\', \'XBLOCK\': \'constexpr\'}, \'device\': DeviceProperties(type=\'cuda\', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), \'constants\': {}, \'native_matmul\': False, \'enable_fp_fusion\': True, \'launch_pdl\': False, \'disable_ftz\': False, \'configs\': [{(0,): [[\'tt.divisibility\', 16]], (1,): [[\'tt.divisibility\', 16]], (2,): [[\'tt.divisibility\', 16]], (3,): [[\'tt.divisibility\', 16]], (4,): [[\'tt.divisibility\', 16]]}]},\n    inductor_meta={\'grid_type\': \'Grid1D\', \'autotune_hints\': set(), \'kernel_name\': \'triton_per_fused_convolution_logsumexp_2\', \'mutated_arg_names\': [\'in_out_ptr0\'], \'optimize_mem\': True, \'no_x_dim\': None, \'atomic_add_found\': False, \'num_load\': 2, \'num_store\': 1, \'num_reduction\': 2, \'backend_hash\': \'91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336\', \'assert_indirect_indexing\': True, \'autotune_local_cache\': True, \'autotune_pointwise\': True, \'autotune_remote_cache\': None, \'force_disable_caches\': False, \'dynamic_scale_rblock\': True, \'max_autotune\': True, \'max_autotune_pointwise\': False, \'min_split_scan_rblock\': 256, \'spill_threshold\': 16, \'store_cubin\': False, \'deterministic\': False, \'force_filter_reduction_configs\': False, \'mix_order_reduction_allow_multi_stages\': False, \'are_deterministic_algorithms_enabled\': False, \'coordinate_descent_tuning\': True, \'coordinate_descent_search_radius\': 1, \'coordinate_descent_check_all_directions\': False, \'tiling_scores\': {\'x\': 2097152, \'r0_\': 134218240}}\n)\n@triton.jit\ndef triton_per_fused_convolution_logsumexp_2(in_out_ptr0, in_ptr0, in_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr):\n    xnumel = 262144\n    r0_numel = 128\n    R0_BLOCK: tl.constexpr = 128\n    rnumel = r0_numel\n    RBLOCK: tl.constexpr = R0_BLOCK\n    xoffset = tl.program_id(0) * XBLOCK\n    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]\n    xmask = tl.full([XBLOCK], True, tl.int1)[:, None]\n    r0_index = tl.arange(0, R0_BLOCK)[None, :]\n    r0_offset = 0\n    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]\n    roffset = r0_offset\n    rindex = r0_index\n    r0_1 = r0_index\n    x0 = xindex\n    tmp0 = tl.load(in_ptr0 + (r0_1 + 128*x0), None)\n    tmp1 = tl.load(in_ptr1 + (r0_1), None, eviction_policy=\'evict_last\')\n    tmp2 = tmp0 + tmp1\n    tmp3 = tl.broadcast_to(tmp2, [XBLOCK, R0_BLOCK])\n    tmp5 = triton_helpers.max2(tmp3, 1)[:, None].to(tl.float32)\n    tmp6 = tl_math.abs(tmp5)\n    tmp7 = tl.full([1, 1], float("inf"), tl.float32)\n    tmp8 = tmp6 == tmp7\n    tmp9 = tl.full([1, 1], 0.0, tl.float32)\n    tmp10 = tl.where(tmp8, tmp9, tmp5)\n    tmp11 = tmp2 - tmp10\n    tmp12 = libdevice.exp(tmp11)\n    tmp13 = tl.broadcast_to(tmp12, [XBLOCK, R0_BLOCK])\n    tmp15 = tl.sum(tmp13, 1)[:, None].to(tl.float32)\n    tmp16 = tl_math.log(tmp15)\n    tmp17 = tmp16 + tmp10\n    tl.debug_barrier()\n    tl.store(in_out_ptr0 + (x0), tmp17, None)\n\'\'\', device_str=\'cuda\')\n\n\nasync_compile.wait(globals())\ndel async_compile\n\nclass Runner:\n    def __init__(self, partitions):\n        self.partitions = partitions\n\n    def recursively_apply_fns(self, fns):\n        new_callables = []\n        for fn, c in zip(fns, self.partitions):\n            new_callables.append(fn(c))\n        self.partitions = new_callables\n\n    def call(self, args):\n        arg0_1, arg1_1, arg2_1 = args\n        args.clear()\n        assert_size_stride(arg0_1, (128, 64, 3, 3), (576, 9, 3, 1))\n        assert_size_stride(arg1_1, (128, ), (1, ))\n        assert_size_stride(arg2_1, (64, 64, 64, 64), (262144, 4096, 64, 1))\n        with torch.cuda._DeviceGuard(0):\n            torch.cuda.set_device(0)\n            buf0 = empty_strided_cuda((64, 64, 64, 64), (262144, 1, 4096, 64), torch.float32)\n            # Topologically Sorted Source Nodes: [x], Original ATen: [aten.convolution]\n            stream0 = get_raw_stream(0)\n            triton_poi_fused_convolution_0.run(arg2_1, buf0, 4096, 4096, stream=stream0)\n            del arg2_1\n            buf1 = empty_strided_cuda((128, 64, 3, 3), (576, 1, 192, 64), torch.float32)\n            # Topologically Sorted Source Nodes: [x], Original ATen: [aten.convolution]\n            stream0 = get_raw_stream(0)\n            triton_poi_fused_convolution_1.run(arg0_1, buf1, 8192, 9, stream=stream0)\n            del arg0_1\n            # Topologically Sorted Source Nodes: [x], Original ATen: [aten.convolution]\n            buf2 = extern_kernels.convolution(buf0, buf1, stride=(1, 1), padding=(1, 1), dilation=(1, 1), transposed=False, output_padding=(0, 0), groups=1, bias=None)\n            assert_size_stride(buf2, (64, 128, 64, 64), (524288, 1, 8192, 128), \'unknown_op\')\n            del buf0\n            del buf1\n            buf4 = empty_strided_cuda((64, 1, 64, 64), (4096, 262144, 64, 1), torch.float32)\n            buf5 = reinterpret_tensor(buf4, (64, 1, 64, 64), (4096, 4096, 64, 1), 0); del buf4  # reuse\n            # Topologically Sorted Source Nodes: [x, logsumexp], Original ATen: [aten.convolution, aten.logsumexp]\n            stream0 = get_raw_stream(0)\n            triton_per_fused_convolution_logsumexp_2.run(buf5, buf2, arg1_1, 262144, 128, stream=stream0)\n            del arg1_1\n            del buf2\n        return (buf5, )\n\nrunner = Runner(partitions=[])\ncall = runner.call\nrecursively_apply_fns = runner.recursively_apply_fns\n\n\ndef get_args():\n    from torch._dynamo.testing import rand_strided\n    arg0_1 = rand_strided((128, 64, 3, 3), (576, 9, 3, 1), device=\'cuda:0\', dtype=torch.float32)\n    arg1_1 = rand_strided((128, ), (1, ), device=\'cuda:0\', dtype=torch.float32)\n    arg2_1 = rand_strided((64, 64, 64, 64), (262144, 4096, 64, 1), device=\'cuda:0\', dtype=torch.float32)\n    return [arg0_1, arg1_1, arg2_1]\n\n\ndef benchmark_compiled_module(args, times=10, repeat=10):\n    from torch._inductor.utils import print_performance\n    fn = lambda: call(list(args))\n    return print_performance(fn, times=times, repeat=repeat)\n\n\nif __name__ == "__main__":\n    from torch._inductor.wrapper_benchmark import compiled_module_main\n    args = get_args()\n    compiled_module_main(\'None\', lambda times, repeat: benchmark_compiled_module(args, times=times, repeat=repeat))\n'
_REPLACEMENTS = {'triton_per_fused_convolution_logsumexp_2': 'import os as _os\n\nimport triton\nimport triton.language as tl\n\nfrom torch._inductor.runtime import triton_helpers\nfrom torch._inductor.runtime.triton_helpers import libdevice, math as tl_math\nif _os.environ.get(\'TRITON_INTERPRET\', \'0\') == \'1\':\n    import triton.language as _tl\n\n    class _InterpreterLibdevice:\n        _composed = {\n            \'tanh\': lambda x: 1.0 - 2.0 / (_tl.math.exp(2.0 * x) + 1.0),\n            \'log1p\': lambda x: _tl.math.log(1.0 + x),\n            \'expm1\': lambda x: _tl.math.exp(x) - 1.0,\n            \'tan\': lambda x: _tl.math.sin(x) / _tl.math.cos(x),\n            \'sinh\': lambda x: (_tl.math.exp(x) - _tl.math.exp(-x)) * 0.5,\n            \'cosh\': lambda x: (_tl.math.exp(x) + _tl.math.exp(-x)) * 0.5,\n            \'log10\': lambda x: _tl.math.log(x) * 0.4342944819032518,\n            \'isnan\': lambda x: x != x,\n            \'trunc\': lambda x: _tl.where(x < 0, _tl.math.ceil(x), _tl.math.floor(x)),\n        }\n\n        def __getattr__(self, name):\n            if name in self._composed:\n                return self._composed[name]\n            fn = getattr(_tl.math, name, None)  # erf, exp, rsqrt, sqrt, log, ...\n            if fn is None:\n                raise AttributeError(f\'libdevice.{name} has no Triton-interpreter equivalent\')\n            return fn\n\n    libdevice = _InterpreterLibdevice()\nfrom torch._inductor.runtime.hints import AutotuneHint, TileHint\nif _os.environ.get(\'TRITON_INTERPRET\', \'0\') != \'1\':\n    triton_helpers.set_driver_to_gpu()\n\n@triton.jit\ndef triton_per_fused_convolution_logsumexp_2(in_out_ptr0, in_ptr0, in_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr):\n    xnumel = 262144\n    r0_numel = 128\n    R0_BLOCK: tl.constexpr = 128\n    rnumel = r0_numel\n    RBLOCK: tl.constexpr = R0_BLOCK\n    xoffset = tl.program_id(0) * XBLOCK\n    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]\n    xmask = tl.full([XBLOCK], True, tl.int1)[:, None]\n    r0_index = tl.arange(0, R0_BLOCK)[None, :]\n    r0_offset = 0\n    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]\n    roffset = r0_offset\n    rindex = r0_index\n    r0_1 = r0_index\n    x0 = xindex\n    tmp0 = tl.load(in_ptr0 + (r0_1 + 128*x0), None)\n    tmp1 = tl.load(in_ptr1 + (r0_1), None, eviction_policy=\'evict_last\')\n    tmp2 = tmp0 + tmp1\n    tmp3 = tl.broadcast_to(tmp2, [XBLOCK, R0_BLOCK])\n    tmp5 = triton_helpers.max2(tmp3, 1)[:, None].to(tl.float32)\n    tmp6 = tl_math.abs(tmp5)\n    tmp7 = tl.full([1, 1], float("inf"), tl.float32)\n    tmp8 = tmp6 == tmp7\n    tmp9 = tl.full([1, 1], 0.0, tl.float32)\n    tmp10 = tl.where(tmp8, tmp9, tmp5)\n    tmp11 = tmp2 - tmp10\n    tmp12 = libdevice.exp(tmp11)\n    tmp13 = tl.broadcast_to(tmp12, [XBLOCK, R0_BLOCK])\n    tmp15 = tl.sum(tmp13, 1)[:, None].to(tl.float32)\n    tmp16 = tl_math.log(tmp15)\n    tmp17 = tmp16 + tmp10\n    tl.debug_barrier()\n    tl.store(in_out_ptr0 + (x0), tmp17, None)\n\n\n# Launch config: XBLOCK=4, num_warps=1, num_stages=1\ndef run(*args, stream=None):\n    if len(args) != 5:\n        raise TypeError(f\'triton_per_fused_convolution_logsumexp_2.run takes 5 launch arguments (in_out_ptr0, in_ptr0, in_ptr1, xnumel, r0_numel), got {len(args)}\')\n    xnumel, r0_numel, = args[3:]\n    grid = (((xnumel) + 4 - 1) // 4, 1, 1)\n    if min(grid) <= 0:\n        return  # an empty launch: nothing to compute\n    triton_per_fused_convolution_logsumexp_2[grid](*args, XBLOCK=4, num_warps=1, num_stages=1)\n'}
_PROBLEM_SOURCE = 'import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\nclass Model(nn.Module):\n    """Conv2d, then logsumexp over the channel dimension (one map per sample)."""\n\n    def __init__(self, in_channels, out_channels, kernel_size):\n        super().__init__()\n        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)\n\n    def forward(self, x):\n        x = self.conv(x)\n        return torch.logsumexp(x, dim=1, keepdim=True)\n\n\nbatch_size = 64\nin_channels = 64\nout_channels = 128\nheight = 64\nwidth = 64\nkernel_size = 3\n# eager ~ 1.3 ms (estimate, not yet measured): conv 38.7 GFLOP (1.1 ms at ~35 TFLOP/s) + logsumexp over\n# channels (max, exp-sum: ~4 passes over a 134 MB activation, 0.17 ms). Input 67 MB.\n\ndef get_inputs():\n    return [torch.randn(batch_size, in_channels, height, width)]\n\n\ndef get_init_inputs():\n    return [in_channels, out_channels, kernel_size]\n'
_PROBLEM_SHA = 'd9804b6a560d848cb366da314e0fbc89cda68dfc805029d84902b430ff429af7'
_ARG_SPECS = [('param', 'conv.weight', [128, 64, 3, 3], [576, 9, 3, 1], 'float32'), ('param', 'conv.bias', [128], [1], 'float32'), ('input', '0', [64, 64, 64, 64], [262144, 4096, 64, 1], 'float32')]
_OUTPUT_MAP = [0]
_OUT_SPEC = '[1, {"type": null, "context": null, "children_spec": []}]'
_KERNEL_CONFIGS = {'triton_poi_fused_convolution_0': {'kwargs': {'XBLOCK': 64, 'YBLOCK': 64}, 'num_warps': 8, 'num_stages': 1}, 'triton_poi_fused_convolution_1': {'kwargs': {'XBLOCK': 8, 'YBLOCK': 512}, 'num_warps': 8, 'num_stages': 1}, 'triton_per_fused_convolution_logsumexp_2': {'kwargs': {'XBLOCK': 8}, 'num_warps': 2, 'num_stages': 1}}
_NEEDS_TENSORS = False
_TENSORS_FILE = 'optimized_module_tensors.pt'


def _load_problem():
    import sys
    import types as _types

    mod = _types.ModuleType("kernelopt_problem_" + _PROBLEM_SHA[:12])
    mod.__file__ = __file__
    sys.modules[mod.__name__] = mod
    exec(compile(_PROBLEM_SOURCE, __file__ + "<problem>", "exec"), mod.__dict__)
    return mod


_problem = _load_problem()
Model = _problem.Model
get_inputs = _problem.get_inputs
get_init_inputs = getattr(_problem, "get_init_inputs", lambda: [])


def _tensors():
    import os

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), _TENSORS_FILE)
    if not _NEEDS_TENSORS:
        return {"consts": [], "module_constants": {}}
    return torch.load(path, weights_only=True)


class ModelNew(Model):
    """`Model` with its forward run by the verified, re-stitched compiled module."""

    def forward(self, *inputs):
        device = next((x.device for x in inputs if isinstance(x, torch.Tensor)), torch.device("cuda"))
        if getattr(self, "_kernelopt_module", None) is None or self._kernelopt_device != device:
            tensors = _tensors()
            self._kernelopt_consts = tensors["consts"]
            self._kernelopt_module = load_output_module(
                _OUTPUT_MODULE_SOURCE, __file__ + "<compiled>", tensors["module_constants"], device,
                _REPLACEMENTS, kernel_configs=_KERNEL_CONFIGS)
            self._kernelopt_device = device
        args = flat_args(_ARG_SPECS, self, list(inputs), self._kernelopt_consts, device)
        return model_outputs(call_module(self._kernelopt_module, args), _OUTPUT_MAP, _OUT_SPEC)
