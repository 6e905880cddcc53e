"""KernelOPT optimized module for 07_layer_norm.py: 1 kernel(s) replaced (triton_per_fused_native_layer_norm_0).

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
    exec(compile(source, filename, "exec"), mod.__dict__)
    for key, value in constants.items():
        setattr(mod, key, value.to(device))
    pin_kernel_configs(mod, kernel_configs or {})
    for kernel_name, kernel_source in (replacements or {}).items():
        if kernel_name not in mod.__dict__:
            raise KeyError(f"the output module has no kernel {kernel_name}")
        setattr(mod, kernel_name, load_kernel_module(kernel_source, kernel_name))
    return mod


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
_OUTPUT_MODULE_SOURCE = '# AOT ID: [\'0_inference\']\nfrom ctypes import c_void_p, c_long, c_int\nimport torch\nimport math\nimport random\nimport os\nimport tempfile\nfrom math import inf, nan\nfrom cmath import nanj\nfrom torch._inductor.hooks import run_intermediate_hooks\nfrom torch._inductor.utils import maybe_profile\nfrom torch._inductor.codegen.memory_planning import _align as align\nfrom torch import device, empty_strided\nfrom torch._inductor.async_compile import AsyncCompile\nfrom torch._inductor.select_algorithm import extern_kernels\nimport triton\nimport triton.language as tl\nfrom torch._inductor.runtime.triton_heuristics import start_graph, end_graph\nfrom torch._C import _cuda_getCurrentRawStream as get_raw_stream\n\naten = torch.ops.aten\ninductor_ops = torch.ops.inductor\n_quantized = torch.ops._quantized\nassert_size_stride = torch._C._dynamo.guards.assert_size_stride\nassert_alignment = torch._C._dynamo.guards.assert_alignment\nempty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu\nempty_strided_cpu_pinned = torch._C._dynamo.guards._empty_strided_cpu_pinned\nempty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda\nempty_strided_xpu = torch._C._dynamo.guards._empty_strided_xpu\nempty_strided_mtia = torch._C._dynamo.guards._empty_strided_mtia\nreinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor\nalloc_from_pool = torch.ops.inductor._alloc_from_pool\nasync_compile = AsyncCompile()\nempty_strided_p2p = torch._C._distributed_c10d._SymmetricMemory.empty_strided_p2p\n\n\n# kernel path: /tmp/torchinductor_root/ck/cckxyqk5uddnl2jpsomb766onrtkz62cvmflnjksppey3tzzse5l.py\n# Topologically Sorted Source Nodes: [layer_norm], Original ATen: [aten.native_layer_norm]\n# Source node to ATen node mapping:\n#   layer_norm => add, add_1, mul, mul_1, rsqrt, sub, var_mean\n# Graph fragment:\n#   %arg2_1 : Tensor "f32[64, 4096, 1024][4194304, 1024, 1]cuda:0" = PlaceHolder[target=arg2_1]\n#   %getitem_1 : Tensor "f32[64, 4096, 1][4096, 1, 262144]cuda:0" = PlaceHolder[target=getitem_1]\n#   %buf1 : Tensor "f32[64, 4096, 1][4096, 1, 262144]cuda:0" = PlaceHolder[target=buf1]\n#   %arg0_1 : Tensor "f32[1024][1]cuda:0" = PlaceHolder[target=arg0_1]\n#   %arg1_1 : Tensor "f32[1024][1]cuda:0" = PlaceHolder[target=arg1_1]\n#   %var_mean : [num_users=2] = call_function[target=torch.ops.aten.var_mean.correction](args = (%arg2_1, [2]), kwargs = {correction: 0, keepdim: True})\n#   %sub : Tensor "f32[64, 4096, 1024][4194304, 1024, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%arg2_1, %getitem_1), kwargs = {})\n#   %add : Tensor "f32[64, 4096, 1][4096, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%getitem, 1e-05), kwargs = {})\n#   %rsqrt : Tensor "f32[64, 4096, 1][4096, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add,), kwargs = {})\n#   %mul : Tensor "f32[64, 4096, 1024][4194304, 1024, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%sub, %rsqrt), kwargs = {})\n#   %mul_1 : Tensor "f32[64, 4096, 1024][4194304, 1024, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul, %arg0_1), kwargs = {})\n#   %add_1 : Tensor "f32[64, 4096, 1024][4194304, 1024, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mul_1, %arg1_1), kwargs = {})\n#   return %getitem_1,%buf1,%add_1\ntriton_per_fused_native_layer_norm_0 = async_compile.triton(\'triton_per_fused_native_layer_norm_0\', \'\'\'\nimport triton\nimport triton.language as tl\n\nfrom torch._inductor.runtime import triton_helpers, triton_heuristics\nfrom torch._inductor.runtime.triton_helpers import libdevice, math as tl_math\nfrom torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties\ntriton_helpers.set_driver_to_gpu()\n\n@triton_heuristics.persistent_reduction(\n    size_hints={\'x\': 262144, \'r0_\': 1024},\n    reduction_hint=ReductionHint.INNER,\n    filename=__file__,\n    triton_meta={\'signature\': {\'in_ptr0\': \'*fp32\', \'in_ptr1\': \'*fp32\', \'in_ptr2\': \'*fp32\', \'out_ptr2\': \'*fp32\', \'xnumel\': \'i32\', \'r0_numel\': \'i32\', \'XBLOCK\': \'constexpr\'}, \'device\': DeviceProperties(type=\'cuda\', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), \'constants\': {}, \'native_matmul\': False, \'enable_fp_fusion\': True, \'launch_pdl\': False, \'disable_ftz\': False, \'configs\': [{(0,): [[\'tt.divisibility\', 16]], (1,): [[\'tt.divisibility\', 16]], (2,): [[\'tt.divisibility\', 16]], (3,): [[\'tt.divisibility\', 16]], (4,): [[\'tt.divisibility\', 16]], (5,): [[\'tt.divisibility\', 16]]}]},\n    inductor_meta={\'grid_type\': \'Grid1D\', \'autotune_hints\': set(), \'kernel_name\': \'triton_per_fused_native_layer_norm_0\', \'mutated_arg_names\': [], \'optimize_mem\': True, \'no_x_dim\': None, \'atomic_add_found\': False, \'num_load\': 3, \'num_store\': 1, \'num_reduction\': 4, \'backend_hash\': \'91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336\', \'assert_indirect_indexing\': True, \'autotune_local_cache\': True, \'autotune_pointwise\': True, \'autotune_remote_cache\': None, \'force_disable_caches\': False, \'dynamic_scale_rblock\': True, \'max_autotune\': True, \'max_autotune_pointwise\': False, \'min_split_scan_rblock\': 256, \'spill_threshold\': 16, \'store_cubin\': False, \'deterministic\': False, \'force_filter_reduction_configs\': False, \'mix_order_reduction_allow_multi_stages\': False, \'are_deterministic_algorithms_enabled\': False, \'coordinate_descent_tuning\': True, \'coordinate_descent_search_radius\': 1, \'coordinate_descent_check_all_directions\': False, \'tiling_scores\': {\'x\': 0, \'r0_\': 3221233664}}\n)\n@triton.jit\ndef triton_per_fused_native_layer_norm_0(in_ptr0, in_ptr1, in_ptr2, out_ptr2, xnumel, r0_numel, XBLOCK : tl.constexpr):\n    xnumel = 262144\n    r0_numel = 1024\n    R0_BLOCK: tl.constexpr = 1024\n    rnumel = r0_numel\n    RBLOCK: tl.constexpr = R0_BLOCK\n    xoffset = tl.program_id(0) * XBLOCK\n    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]\n    xmask = tl.full([XBLOCK], True, tl.int1)[:, None]\n    r0_index = tl.arange(0, R0_BLOCK)[None, :]\n    r0_offset = 0\n    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]\n    roffset = r0_offset\n    rindex = r0_index\n    r0_1 = r0_index\n    x0 = xindex\n    tmp0 = tl.load(in_ptr0 + (r0_1 + 1024*x0), None)\n    tmp21 = tl.load(in_ptr1 + (r0_1), None, eviction_policy=\'evict_last\')\n    tmp23 = tl.load(in_ptr2 + (r0_1), None, eviction_policy=\'evict_last\')\n    tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])\n    tmp3 = tl.broadcast_to(tmp1, [XBLOCK, R0_BLOCK])\n    tmp5 = tl.sum(tmp3, 1)[:, None].to(tl.float32)\n    tmp6 = tl.full([1, 1], 1024, tl.int32)\n    tmp7 = tmp6.to(tl.float32)\n    tmp8 = (tmp5 / tmp7)\n    tmp9 = tmp1 - tmp8\n    tmp10 = tmp9 * tmp9\n    tmp11 = tl.broadcast_to(tmp10, [XBLOCK, R0_BLOCK])\n    tmp13 = tl.sum(tmp11, 1)[:, None].to(tl.float32)\n    tmp14 = tmp0 - tmp8\n    tmp15 = tl.full([1, 1], 1024.0, tl.float32)\n    tmp16 = (tmp13 / tmp15)\n    tmp17 = tl.full([1, 1], 1e-05, tl.float32)\n    tmp18 = tmp16 + tmp17\n    tmp19 = libdevice.rsqrt(tmp18)\n    tmp20 = tmp14 * tmp19\n    tmp22 = tmp20 * tmp21\n    tmp24 = tmp22 + tmp23\n    tl.store(out_ptr2 + (r0_1 + 1024*x0), tmp24, None)\n\'\'\', device_str=\'cuda\')\n\n\nasync_compile.wait(globals())\ndel async_compile\n\nclass Runner:\n    def __init__(self, partitions):\n        self.partitions = partitions\n\n    def recursively_apply_fns(self, fns):\n        new_callables = []\n        for fn, c in zip(fns, self.partitions):\n            new_callables.append(fn(c))\n        self.partitions = new_callables\n\n    def call(self, args):\n        arg0_1, arg1_1, arg2_1 = args\n        args.clear()\n        assert_size_stride(arg0_1, (1024, ), (1, ))\n        assert_size_stride(arg1_1, (1024, ), (1, ))\n        assert_size_stride(arg2_1, (64, 4096, 1024), (4194304, 1024, 1))\n        with torch.cuda._DeviceGuard(0):\n            torch.cuda.set_device(0)\n            buf3 = empty_strided_cuda((64, 4096, 1024), (4194304, 1024, 1), torch.float32)\n            # Topologically Sorted Source Nodes: [layer_norm], Original ATen: [aten.native_layer_norm]\n            stream0 = get_raw_stream(0)\n            triton_per_fused_native_layer_norm_0.run(arg2_1, arg0_1, arg1_1, buf3, 262144, 1024, stream=stream0)\n            del arg0_1\n            del arg1_1\n            del arg2_1\n        return (buf3, )\n\nrunner = Runner(partitions=[])\ncall = runner.call\nrecursively_apply_fns = runner.recursively_apply_fns\n\n\ndef get_args():\n    from torch._dynamo.testing import rand_strided\n    arg0_1 = rand_strided((1024, ), (1, ), device=\'cuda:0\', dtype=torch.float32)\n    arg1_1 = rand_strided((1024, ), (1, ), device=\'cuda:0\', dtype=torch.float32)\n    arg2_1 = rand_strided((64, 4096, 1024), (4194304, 1024, 1), device=\'cuda:0\', dtype=torch.float32)\n    return [arg0_1, arg1_1, arg2_1]\n\n\ndef benchmark_compiled_module(args, times=10, repeat=10):\n    from torch._inductor.utils import print_performance\n    fn = lambda: call(list(args))\n    return print_performance(fn, times=times, repeat=repeat)\n\n\nif __name__ == "__main__":\n    from torch._inductor.wrapper_benchmark import compiled_module_main\n    args = get_args()\n    compiled_module_main(\'level1/10_softmax,level1/07_layer_norm,level2/01_linear_bias_gelu,level1/04_sum_dim\', lambda times, repeat: benchmark_compiled_module(args, times=times, repeat=repeat))\n'
_REPLACEMENTS = {'triton_per_fused_native_layer_norm_0': "import os as _os\n\nimport triton\nimport triton.language as tl\n\nfrom torch._inductor.runtime import triton_helpers\nfrom torch._inductor.runtime.triton_helpers import libdevice, math as tl_math\nif _os.environ.get('TRITON_INTERPRET', '0') == '1':\n    import triton.language as _tl\n\n    class _InterpreterLibdevice:\n        _composed = {\n            'tanh': lambda x: 1.0 - 2.0 / (_tl.math.exp(2.0 * x) + 1.0),\n            'log1p': lambda x: _tl.math.log(1.0 + x),\n            'expm1': lambda x: _tl.math.exp(x) - 1.0,\n            'tan': lambda x: _tl.math.sin(x) / _tl.math.cos(x),\n            'sinh': lambda x: (_tl.math.exp(x) - _tl.math.exp(-x)) * 0.5,\n            'cosh': lambda x: (_tl.math.exp(x) + _tl.math.exp(-x)) * 0.5,\n            'log10': lambda x: _tl.math.log(x) * 0.4342944819032518,\n            'isnan': lambda x: x != x,\n            'trunc': lambda x: _tl.where(x < 0, _tl.math.ceil(x), _tl.math.floor(x)),\n        }\n\n        def __getattr__(self, name):\n            if name in self._composed:\n                return self._composed[name]\n            fn = getattr(_tl.math, name, None)  # erf, exp, rsqrt, sqrt, log, ...\n            if fn is None:\n                raise AttributeError(f'libdevice.{name} has no Triton-interpreter equivalent')\n            return fn\n\n    libdevice = _InterpreterLibdevice()\nfrom torch._inductor.runtime.hints import AutotuneHint, TileHint\nif _os.environ.get('TRITON_INTERPRET', '0') != '1':\n    triton_helpers.set_driver_to_gpu()\n\n@triton.jit\ndef triton_per_fused_native_layer_norm_0(in_ptr0, in_ptr1, in_ptr2, out_ptr2, xnumel, r0_numel, XBLOCK : tl.constexpr):\n    xnumel = 262144\n    r0_numel = 1024\n    R0_BLOCK: tl.constexpr = 1024\n    rnumel = r0_numel\n    RBLOCK: tl.constexpr = R0_BLOCK\n    xoffset = tl.program_id(0) * XBLOCK\n    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]\n    xmask = tl.full([XBLOCK], True, tl.int1)[:, None]\n    r0_index = tl.arange(0, R0_BLOCK)[None, :]\n    r0_offset = 0\n    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]\n    roffset = r0_offset\n    rindex = r0_index\n    r0_1 = r0_index\n    x0 = xindex\n    tmp0 = tl.load(in_ptr0 + (r0_1 + 1024*x0), None)\n    tmp21 = tl.load(in_ptr1 + (r0_1), None, eviction_policy='evict_last')\n    tmp23 = tl.load(in_ptr2 + (r0_1), None, eviction_policy='evict_last')\n    tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])\n    tmp3 = tl.broadcast_to(tmp1, [XBLOCK, R0_BLOCK])\n    tmp5 = tl.sum(tmp3, 1)[:, None].to(tl.float32)\n    tmp6 = tl.full([1, 1], 1024, tl.int32)\n    tmp7 = tmp6.to(tl.float32)\n    tmp8 = (tmp5 / tmp7)\n    tmp9 = tmp1 - tmp8\n    tmp10 = tmp9 * tmp9\n    tmp11 = tl.broadcast_to(tmp10, [XBLOCK, R0_BLOCK])\n    tmp13 = tl.sum(tmp11, 1)[:, None].to(tl.float32)\n    tmp14 = tmp0 - tmp8\n    tmp15 = tl.full([1, 1], 1024.0, tl.float32)\n    tmp16 = (tmp13 / tmp15)\n    tmp17 = tl.full([1, 1], 1e-05, tl.float32)\n    tmp18 = tmp16 + tmp17\n    tmp19 = libdevice.rsqrt(tmp18)\n    tmp20 = tmp14 * tmp19\n    tmp22 = tmp20 * tmp21\n    tmp24 = tmp22 + tmp23\n    tl.store(out_ptr2 + (r0_1 + 1024*x0), tmp24, None)\n\n\n# Launch config: XBLOCK=1, num_warps=4, num_stages=1\ndef run(*args, stream=None):\n    if len(args) != 6:\n        raise TypeError(f'triton_per_fused_native_layer_norm_0.run takes 6 launch arguments (in_ptr0, in_ptr1, in_ptr2, out_ptr2, xnumel, r0_numel), got {len(args)}')\n    xnumel, r0_numel, = args[4:]\n    grid = (xnumel, 1, 1)\n    if min(grid) <= 0:\n        return  # an empty launch: nothing to compute\n    triton_per_fused_native_layer_norm_0[grid](*args, XBLOCK=1, num_warps=4, num_stages=1)\n"}
_PROBLEM_SOURCE = 'import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\nclass Model(nn.Module):\n    """LayerNorm over the last dimension, with non-trivial affine parameters."""\n\n    def __init__(self, normalized_shape):\n        super().__init__()\n        self.ln = nn.LayerNorm(normalized_shape)\n        with torch.no_grad():\n            self.ln.weight.normal_(1.0, 0.1)\n            self.ln.bias.normal_(0.0, 0.1)\n\n    def forward(self, x):\n        return self.ln(x)\n\n\nbatch_size = 64\nseq_len = 4096\nfeatures = 1024\n# eager ~ 0.61 ms: native_layer_norm reads and writes a 1.07 GB tensor once (2.1 GB).\n# measured eager on one H200 (fp32, TF32 off, torch 2.11): 0.78 ms.\n\ndef get_inputs():\n    return [torch.randn(batch_size, seq_len, features)]\n\n\ndef get_init_inputs():\n    return [features]\n'
_PROBLEM_SHA = '7f21f55f192906b8d7669c268fd4966d5c32ceaa43eadc2aba422928a4031035'
_ARG_SPECS = [('param', 'ln.weight', [1024], [1], 'float32'), ('param', 'ln.bias', [1024], [1], 'float32'), ('input', '0', [64, 4096, 1024], [4194304, 1024, 1], 'float32')]
_OUTPUT_MAP = [0]
_OUT_SPEC = '[1, {"type": null, "context": null, "children_spec": []}]'
_KERNEL_CONFIGS = {'triton_per_fused_native_layer_norm_0': {'kwargs': {'XBLOCK': 2}, 'num_warps': 8, 'num_stages': 1}}
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
