"""Helion's own configurations as candidates (the LLM-free generator for Helion kernel files).

A Helion kernel file's candidates are the same file with each `@helion.kernel` decorator pinned to a
configuration of Helion's space: the first round offers Helion's default config (where the file pins one of
its own), the pattern-search neighbours of the file's config (one coordinate of Helion's flat config changed:
a block size doubled or halved, another loop order, indexing, pid type, warps, stages, ...) and a few random
points; later rounds the neighbours of the beam's best, so the search walks Helion's space under the gates'
feedback and the job's time budget instead of autotuning it exhaustively. Every candidate pins every kernel
(never autotunes at load): the deployed file runs the configuration that won.

The space comes from a sandboxed child (`space`, set by the kernel job: helion_space.helion_space run in the
sandbox); its configs are admitted as plain data before any is written into a source.
"""
from __future__ import annotations

import json
from typing import Callable, Optional

from kernelopt.load.helion_file import (
    HelionConfigError,
    config_text,
    helion_kernels,
    is_helion_source,
    pin_configs,
    plain_config,
)
from kernelopt.search.generator import Attempt, Candidate, KernelTarget
from kernelopt.search.generators.helion_space import HelionSpace, KernelSpace

#: seeds (kernel -> configs whose neighbours are wanted) -> the space, computed in a sandboxed child
SpaceFn = Callable[[dict[str, list[dict]]], HelionSpace]


def admit_space(space: object) -> list[KernelSpace]:
    """The child's answer as typed plain data, or HelionConfigError: it was written by a process that ran the
    submitted file, so nothing in it is taken on trust (names are identifiers, every config plain data)."""
    kernels = getattr(space, "kernels", None) if isinstance(space, HelionSpace) else None
    if not isinstance(kernels, list) or not all(isinstance(k, KernelSpace) for k in kernels):
        raise HelionConfigError("the configuration space's child did not answer a HelionSpace")
    admitted = []
    for k in kernels:
        if not isinstance(k.name, str) or not k.name.isidentifier():
            raise HelionConfigError(f"kernel name {str(k.name)[:40]!r} is not an identifier")
        lists = [k.neighbours, k.random]
        if not all(isinstance(x, list) and len(x) <= 512 for x in lists):
            raise HelionConfigError(f"{k.name}: the space's config lists are not lists of at most 512")
        if type(k.n_coordinates) is not int:
            raise HelionConfigError(f"{k.name}: the number of coordinates is not an integer")
        admitted.append(KernelSpace(k.name, plain_config(k.default), plain_config(k.current),
                                    [plain_config(c) for c in k.neighbours], [plain_config(c) for c in k.random],
                                    k.n_coordinates))
    return admitted


def _key(configs: dict[str, dict]) -> str:
    return json.dumps(configs, sort_keys=True)


class HelionConfigGenerator:
    name = "helion_config"

    def __init__(self) -> None:
        self.space: Optional[SpaceFn] = None  # set by the kernel job before the search
        self.baseline: dict[str, dict] = {}  # kernel -> the config the file itself runs under

    def applicable(self, target: KernelTarget) -> Optional[str]:
        if not is_helion_source(target.source):
            return "not a Helion kernel file (no @helion.kernel function)"
        if self.space is None:
            return "Helion's configuration space is not available to this job"
        return None

    def _ask(self, seeds: dict[str, list[dict]]) -> list[KernelSpace]:
        assert self.space is not None
        return admit_space(self.space(seeds))

    def propose(self, target: KernelTarget, beam: list[Attempt], history: list[Attempt],
                budget: int) -> list[Candidate]:
        best: dict[str, dict] = dict(beam[0].candidate.params.get("configs", {})) if beam else {}
        kernels = self._ask({k: [c] for k, c in best.items()})
        if not self.baseline:
            self.baseline = {k.name: k.current for k in kernels}
        start = {k.name: best.get(k.name, k.current) for k in kernels}
        options: list[tuple[str, dict, str]] = []  # (kernel, config, why)
        if not beam:  # the file's own candidates first (`configs=[...]`: what its author would autotune over)
            listed = {k.name: k.listed for k in helion_kernels(target.source)}
            options += [(k.name, c, "one of the file's own configs") for k in kernels for c in listed.get(k.name, ())]
            options += [(k.name, k.default, "Helion's default config") for k in kernels if k.default != k.current]
        for k in kernels:
            options += [(k.name, c, "a neighbour of " + ("the best" if beam else "the file's config"))
                        for c in k.neighbours]
        for k in kernels:
            options += [(k.name, c, "a random point of Helion's space") for c in k.random]
        seen = {_key(a.candidate.params.get("configs", {})) for a in history}
        seen.add(_key(self.baseline))
        proposals: list[Candidate] = []
        for kernel, config, why in options:  # admitted above; a kernel the file lacks raises (the search says so)
            configs = {**start, kernel: config}
            key = _key(configs)
            if key in seen:
                continue
            seen.add(key)
            source = pin_configs(target.source, configs)
            proposals.append(Candidate(target.name, source, self.name, f"{kernel}: {why}: {config_text(config)}",
                                       params={"configs": configs},
                                       parent=beam[0].candidate.id if beam else None))
            if len(proposals) >= budget:
                break
        return proposals
