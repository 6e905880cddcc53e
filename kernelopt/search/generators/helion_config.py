"""Helion's own configurations as candidates (the LLM-free generator for Helion kernel files).

A Helion kernel file's candidates are the same file with each `@helion.kernel` decorator pinned to a
configuration of Helion's space: the first round offers Helion's default config (where the file pins one of
its own), the pattern-search neighbours of the file's config (one coordinate of Helion's flat config changed:
a block size doubled or halved, another loop order, indexing, pid type, warps, stages, ...) and a few random
points; later rounds the neighbours of the beam's best, so the search walks Helion's space under the gates'
feedback and the job's time budget instead of autotuning it exhaustively. Every candidate pins every kernel
(never autotunes at load): the deployed file runs the configuration that won.

The space comes from a sandboxed child (`space`, set by the kernel job: helion_space.helion_space run in the
sandbox); its configs are admitted as plain data before any is written into a source. One child answers two
steps of the walk (the neighbours of every config it offers, and a pool of random points for several rounds), so
a round whose best is one of those needs no child of its own: a child imports Helion and compiles the kernel,
which took 25 s of a 40 s round on an H100 (a cached round: 1-2.5 s).
"""
from __future__ import annotations

import json
from dataclasses import replace
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

#: (seeds: kernel -> configs whose neighbours are wanted, depth, random points wanted) -> the space, computed in
#: a sandboxed child
SpaceFn = Callable[[dict[str, list[dict]], int, int], HelionSpace]
#: random points offered per kernel each round, and drawn per child (the rounds it serves from its answer)
RANDOM_PER_ROUND = 4
RANDOM_PER_CHILD = 12
#: at most this many configs a child's answer holds (neighbours, random points and further neighbours, all kernels)
MAX_CONFIGS = 20_000


def admit_space(space: object) -> list[KernelSpace]:
    """The child's answer as typed plain data, or HelionConfigError: it was written by a process that ran the
    submitted file, so nothing in it is taken on trust (names are identifiers, every config plain data)."""
    kernels = getattr(space, "kernels", None) if isinstance(space, HelionSpace) else None
    if not isinstance(kernels, list) or not all(isinstance(k, KernelSpace) for k in kernels):
        raise HelionConfigError("the configuration space's child did not answer a HelionSpace")
    admitted = []
    total = 0
    for k in kernels:
        if not isinstance(k.name, str) or not k.name.isidentifier():
            raise HelionConfigError(f"kernel name {str(k.name)[:40]!r} is not an identifier")
        lists = [k.neighbours, k.random]
        if not all(isinstance(x, list) and len(x) <= 512 for x in lists):
            raise HelionConfigError(f"{k.name}: the space's config lists are not lists of at most 512")
        if type(k.n_coordinates) is not int:
            raise HelionConfigError(f"{k.name}: the number of coordinates is not an integer")
        if not isinstance(k.further, list) or not all(
                isinstance(f, tuple) and len(f) == 2 and isinstance(f[1], list) and len(f[1]) <= 512
                for f in k.further) or len(k.further) > 512:
            raise HelionConfigError(f"{k.name}: the further neighbours are not a list of (config, configs) pairs")
        total += len(k.neighbours) + len(k.random) + sum(1 + len(f[1]) for f in k.further)
        if total > MAX_CONFIGS:
            raise HelionConfigError(f"the configuration space's child answered more than {MAX_CONFIGS} configs")
        admitted.append(KernelSpace(k.name, plain_config(k.default), plain_config(k.current),
                                    [plain_config(c) for c in k.neighbours], [plain_config(c) for c in k.random],
                                    k.n_coordinates,
                                    [(plain_config(c), [plain_config(n) for n in ns]) for c, ns in k.further]))
    return admitted


def _key(configs: dict[str, dict]) -> str:
    return json.dumps(configs, sort_keys=True)


class HelionConfigGenerator:
    name = "helion_config"

    def __init__(self) -> None:
        self.space: Optional[SpaceFn] = None  # set by the kernel job before the search
        self.baseline: dict[str, dict] = {}  # kernel -> the config the file itself runs under
        self.kernels: list[KernelSpace] = []  # the first child's answer (names, defaults, file configs, in order)
        self.known: dict[tuple[str, str], list[dict]] = {}  # (kernel, config key) -> that config's neighbours
        self.pool: dict[str, list[dict]] = {}  # kernel -> random points not offered yet

    def applicable(self, target: KernelTarget) -> Optional[str]:
        if not is_helion_source(target.source):
            return "not a Helion kernel file (no @helion.kernel function)"
        if self.space is None:
            return "Helion's configuration space is not available to this job"
        return None

    def _space(self, best: dict[str, dict]) -> list[KernelSpace]:
        """Each kernel's neighbours of its config in `best` (the file's own where `best` has none) and random
        points (while the last child's pool lasts): from what an earlier child answered where it holds every
        kernel's neighbours, else from a new child."""
        assert self.space is not None
        seeds = {k.name: best.get(k.name, k.current) for k in self.kernels}
        if self.kernels and all((n, _key(c)) in self.known for n, c in seeds.items()):
            return [replace(k, neighbours=self.known[(k.name, _key(seeds[k.name]))], random=self._draw(k.name))
                    for k in self.kernels]
        kernels = admit_space(self.space({k: [c] for k, c in best.items()}, 2, RANDOM_PER_CHILD))
        if not self.kernels:
            self.kernels = kernels
        for k in kernels:
            seed = best.get(k.name, k.current)
            self.known[(k.name, _key(seed))] = k.neighbours
            self.known.update({(k.name, _key(c)): ns for c, ns in k.further})
            self.pool[k.name] = list(k.random)
        return [replace(k, random=self._draw(k.name)) for k in kernels]

    def _draw(self, kernel: str) -> list[dict]:
        drawn, self.pool[kernel] = self.pool[kernel][:RANDOM_PER_ROUND], self.pool[kernel][RANDOM_PER_ROUND:]
        return drawn

    def propose(self, target: KernelTarget, beam: list[Attempt], history: list[Attempt],
                budget: int) -> list[Candidate]:
        best: dict[str, dict] = dict(beam[0].candidate.params.get("configs", {})) if beam else {}
        kernels = self._space(best)
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
