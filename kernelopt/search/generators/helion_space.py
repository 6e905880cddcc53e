"""Helion's configuration space for a kernel file, as plain data (a stage function for a sandboxed child).

The child imports the submitted file, runs `launch` once on seed-0 inputs (each `@helion.kernel` under the
config the file pins, else Helion's default: the job's children run with HELION_AUTOTUNE_EFFORT=none, so no
autotuning starts), and binds every kernel it saw to the arguments it was called with. From each bound
kernel's ConfigSpec it answers, per kernel: Helion's default config, the file's own, the pattern-search
neighbours of each seed config the request names (one flat coordinate changed, Helion's own
`pattern_neighbors`), and a few random configs of the space. With `depth=2` it also answers the
neighbours of each config it offers: the search's next round starts from one of them, and reading them here
spares it a child (importing Helion and compiling the kernel: most of a round's time on an H100). Configs
cross as dicts; the trusted side admits them as plain data only (load/helion_file.plain_config) before
writing any into a source.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field


@dataclass
class HelionSpaceRequest:
    problem_path: str
    dtype: str = "fp32"
    device: str = "cuda"
    seeds: dict[str, list[dict]] = field(default_factory=dict)  # kernel -> configs whose neighbours are wanted
    n_random: int = 4
    random_seed: int = 0
    depth: int = 1  # 2: the neighbours of each config offered, too (`KernelSpace.further`)


@dataclass
class KernelSpace:
    name: str
    default: dict
    current: dict  # the config this launch ran under (the file's pinned one, else the default)
    neighbours: list[dict]
    random: list[dict]
    n_coordinates: int
    # depth 2: (a config, its own neighbours), for each config offered here (neighbours, random points, default)
    further: list[tuple[dict, list[dict]]] = field(default_factory=list)


@dataclass
class HelionSpace:
    kernels: list[KernelSpace]  # in the order launch called them


def helion_space(req: HelionSpaceRequest) -> HelionSpace:
    import torch
    from helion.autotuner.config_generation import ConfigGeneration
    from helion.runtime.kernel import Kernel

    from kernelopt.load.problem import dtype_from_name, import_problem, make_inputs

    mod = import_problem(req.problem_path, module_name="kernelopt_helion_space")
    inputs = make_inputs(mod, 0, req.device, dtype_from_name(req.dtype))
    called: dict[str, tuple] = {}
    real_call = Kernel.__call__

    def recording(self, *args, **kwargs):
        if self.name not in called:
            called[self.name] = (self, self.normalize_args(*args, **kwargs) if kwargs else args)
        return real_call(self, *args, **kwargs)

    Kernel.__call__ = recording  # type: ignore[method-assign]
    try:
        with torch.no_grad():
            mod.launch(*inputs)
    finally:
        Kernel.__call__ = real_call  # type: ignore[method-assign]
    rng = random.Random(req.random_seed)
    out = []
    for name, (kernel, args) in called.items():
        bound = kernel.bind(tuple(args))
        gen = ConfigGeneration(bound.config_spec)
        default = bound.config_spec.default_config()
        current = bound._config if getattr(bound, "_config", None) is not None else default
        neighbours: list[dict] = []
        for seed in req.seeds.get(name, []) or [current.config]:
            neighbours += [c for c in _neighbours(gen, seed) if c not in neighbours]
        state = random.getstate()
        random.seed(rng.random())  # Helion's fragments draw from the module's generator: seeded per request
        try:
            randoms = [dict(gen.unflatten(gen.random_flat()).config) for _ in range(req.n_random)]
        finally:
            random.setstate(state)
        # where the next round can start: any config this answer offers
        further = ([(c, _neighbours(gen, c)) for c in [*neighbours, *randoms, dict(default.config)]]
                   if req.depth >= 2 else [])
        out.append(KernelSpace(name, dict(default.config), dict(current.config), neighbours, randoms,
                               len(gen.flat_spec), further))
    return HelionSpace(out)


def _neighbours(gen, seed: dict) -> list[dict]:
    """The configs one flat coordinate away from `seed` (Helion's own `pattern_neighbors`), the seed excluded."""
    flat = gen.flatten(_config(seed))
    known = {_key(dict(gen.unflatten(list(flat)).config))}
    out = []
    for i, fragment in enumerate(gen.flat_spec):
        for value in fragment.pattern_neighbors(flat[i]):
            changed = list(flat)
            changed[i] = value
            config = dict(gen.unflatten(changed).config)
            if _key(config) not in known:  # Helion normalizes some changes back to the seed itself
                known.add(_key(config))
                out.append(config)
    return out


def _key(config: dict) -> str:
    return json.dumps(config, sort_keys=True, default=str)


def _config(values: dict):
    import helion

    return helion.Config(**values)
