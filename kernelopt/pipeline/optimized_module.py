"""The deployable artifact: `optimized_module.py` with a `ModelNew(nn.Module)`.

The file is self-contained (torch and triton only): it embeds the compiled
module's source, the accepted kernels, the problem's own source (so
`ModelNew` builds the same parameters as `Model` and loads the same state
dicts), and the small runtime that re-stitches them.
"""
from __future__ import annotations

import inspect
from pathlib import Path

import torch

from kernelopt.compiled import runtime
from kernelopt.compiled.graph import CapturedGraph
from kernelopt.compiled.restitch import arg_tuples, load_tensors, stitched_source
from kernelopt.load.problem import source_sha256
from kernelopt.pipeline.report import read_safely, write_safely

TENSORS_NAME = "optimized_module_tensors.pt"

_TAIL = '''

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
'''


def write_optimized_module(path: Path, cg: CapturedGraph, problem_path: str,
                           replacements: dict[str, str], header: str) -> Path:
    """Write the artifact (and its tensor file when the graph has constants)."""
    tensors = load_tensors(cg)
    needs_tensors = bool(tensors["consts"]) or bool(tensors["module_constants"])
    if needs_tensors:
        torch.save(tensors, path.parent / TENSORS_NAME)
    runtime_src = inspect.getsource(runtime).replace("from __future__ import annotations\n", "")
    parts = [
        f'"""{header}\n\nUsage:\n    from optimized_module import ModelNew, get_init_inputs\n'
        '    model = ModelNew(*get_init_inputs()).cuda()  # same parameters as Model\n"""\n',
        "from __future__ import annotations\n",
        "# ---- runtime (compiled/runtime.py of KernelOPT) ----\n",
        runtime_src,
        "\n# ---- what was verified ----\n",
        # library groups replaced: their statements of call() already launch the candidates
        f"_OUTPUT_MODULE_SOURCE = {stitched_source(read_safely(Path(cg.module_path)).decode(), replacements)!r}\n",
        f"_REPLACEMENTS = {dict(replacements)!r}\n",
        f"_PROBLEM_SOURCE = {Path(problem_path).read_text()!r}\n",
        f"_PROBLEM_SHA = {source_sha256(problem_path)!r}\n",
        f"_ARG_SPECS = {arg_tuples(cg)!r}\n",
        f"_OUTPUT_MAP = {list(cg.output_map)!r}\n",
        f"_OUT_SPEC = {cg.out_spec!r}\n",
        f"_KERNEL_CONFIGS = {cg.kernel_configs!r}\n",
        f"_NEEDS_TENSORS = {needs_tensors!r}\n",
        f"_TENSORS_FILE = {TENSORS_NAME!r}\n",
        _TAIL,
    ]
    write_safely(path, "".join(parts))
    return path
