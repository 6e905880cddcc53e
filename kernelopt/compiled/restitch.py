"""Stage 7's mechanism: run the captured module with any set of kernels replaced.

With no replacement the module is Inductor's own code, run on the real weights:
it reproduces the compiled model's output bit for bit (tested on every problem).
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from kernelopt.compiled import runtime
from kernelopt.compiled.graph import WEIGHTS_FILE, CapturedGraph
from kernelopt.compiled.group import is_group_name, rewrite_module
from kernelopt.load.problem import build_model, dtype_from_name, import_problem, make_inputs


def load_tensors(cg: CapturedGraph) -> dict:
    import torch

    if not cg.tensors_path.exists():
        return {"consts": [], "module_constants": {}}
    return torch.load(cg.tensors_path, weights_only=True)


def load_stitched(cg: CapturedGraph, replacements: dict[str, str] | None, device: str,
                  transform: Callable[[str], str] | None = None) -> types.ModuleType:
    """Inductor's module with `replacements` (kernel or library-group name → candidate source) swapped in;
    `transform`: a rewrite of the resulting source that computes the same (the profile's ranges)."""
    tensors = load_tensors(cg)
    source = stitched_source(Path(cg.module_path).read_text(), replacements)
    if transform is not None:
        source = transform(source)
    return runtime.load_output_module(source, cg.module_path, tensors["module_constants"], device,
                                      replacements, kernel_configs=cg.kernel_configs)


def stitched_source(source: str, replacements: dict[str, str] | None) -> str:
    """The output module's source with the replaced library groups' statements rewritten
    to launch their candidates (compiled.group); unchanged when no group is replaced."""
    groups = [name for name in (replacements or {}) if is_group_name(name)]
    return rewrite_module(source, groups) if groups else source


def arg_tuples(cg: CapturedGraph) -> list[tuple]:
    return [(a.kind, a.ref, a.shape, a.stride, a.dtype) for a in cg.args]


@dataclass
class ModelContext:
    """A problem's model (seed 42) and its captured graph, ready to run for any input seed."""

    problem_path: str
    workdir: str
    dtype: str = "fp32"
    device: str = "cuda"
    weights_dir: str | None = None  # where the job's weights are, when not in `workdir` (a rewrite's capture)
    _model: object = field(default=None, repr=False)
    _problem: object = field(default=None, repr=False)
    _consts: list | None = field(default=None, repr=False)

    @property
    def captured(self) -> CapturedGraph:
        return CapturedGraph.load(self.workdir)

    @property
    def problem(self):
        if self._problem is None:
            self._problem = import_problem(self.problem_path)
        return self._problem

    @property
    def weights(self) -> Path | None:
        """The job's weights, kept in its workdir (pipeline.job copies them there)."""
        path = Path(self.weights_dir or self.workdir) / WEIGHTS_FILE
        return path if path.exists() else None

    @property
    def model(self):
        if self._model is None:
            self._model = build_model(self.problem, self.device, dtype_from_name(self.dtype), weights=self.weights)
        return self._model

    def inputs(self, seed: int) -> list:
        return make_inputs(self.problem, seed, self.device, dtype_from_name(self.dtype))

    def flat_args(self, inputs: list) -> list:
        if self._consts is None:
            self._consts = load_tensors(self.captured)["consts"]
        return runtime.flat_args(arg_tuples(self.captured), self.model, inputs, self._consts, self.device)

    def candidate(self, workdir: str) -> "ModelContext":
        """The same model and inputs, run by another capture of it (a rewritten graph's, in `workdir`)."""
        other = ModelContext(self.problem_path, workdir, self.dtype, self.device,
                             weights_dir=self.weights_dir or self.workdir)
        other._problem, other._model = self.problem, self.model
        return other

    def module(self, replacements: dict[str, str] | None = None,
               transform: Callable[[str], str] | None = None) -> types.ModuleType:
        return load_stitched(self.captured, replacements, self.device, transform)

    def run(self, mod: types.ModuleType, inputs: list) -> list:
        """The model's output leaves, computed by the (re-stitched) module."""
        cg = self.captured
        outs = runtime.call_module(mod, self.flat_args(inputs))
        return [outs[i] for i in cg.output_map]
