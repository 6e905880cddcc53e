"""Launch-configuration expansion: the first built-in, LLM-free candidate generator.

Inductor tunes each pointwise/reduction kernel over a handful of configs (and
coordinate descent around the winner); the jit function itself is often fine
but the block sizes, num_warps and num_stages it settles on are not always
the fastest for the real shapes. This generator keeps Inductor's jit function
verbatim and proposes other launch configurations, each as a standalone
candidate module (see kernel_source.standalone_module), searched
coordinate-descent style around the best configuration known so far.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Optional

from kernelopt.search.generator import Attempt, Candidate, KernelTarget
from kernelopt.search.kernel_source import KernelSource, parse_kernel, standalone_module

# Tunable block constexpr -> the prefix of its dimension (xnumel, xmask, ...).
BLOCK_PREFIX = {"XBLOCK": "x", "YBLOCK": "y", "ZBLOCK": "z", "R0_BLOCK": "r0_"}
WARPS = (1, 2, 4, 8, 16, 32)
STAGES = (1, 2, 3, 4)
# Per-kind search ranges (powers of two, inclusive) and block-numel caps. Caps
# keep registers sane: every element of a block lives in a register, and
# Triton's hard limit (2**20 elements) is far above what ever runs well.
RANGES = {
    ("pointwise", "XBLOCK", 1): (32, 4096),
    ("pointwise", "XBLOCK", 2): (1, 1024),
    ("pointwise", "YBLOCK", 2): (1, 1024),
    ("pointwise", "XBLOCK", 3): (1, 1024),
    ("pointwise", "YBLOCK", 3): (1, 1024),
    ("pointwise", "ZBLOCK", 3): (1, 1024),
    ("reduction", "XBLOCK", 1): (1, 128),
    ("reduction", "R0_BLOCK", 1): (16, 2048),
    ("persistent", "XBLOCK", 1): (1, 128),
}
MAX_BLOCK_NUMEL = {"pointwise": 4096, "reduction": 8192, "persistent": 8192}
MAX_ELEMS_PER_THREAD = 64  # beyond this a block spills or serialises; never faster
MAX_Y_GRID = 65535  # CUDA's limit on gridDim.y and gridDim.z (Inductor switches grid type beyond it)


@dataclass(frozen=True)
class GridModel:
    """How this generator launches a kernel of one Inductor grid type (`inductor_meta["grid_type"]`)."""

    ndim: int | None  # x[, y[, z]] extents from numel/BLOCK; None: not re-launched, for `reason`
    kinds: tuple[str, ...] = ("pointwise", "reduction", "persistent")
    program_id_axes: frozenset[int] = frozenset()  # axes the body may read beyond ndim (always 0 here)
    reason: str = ""


# Every GridExpr subclass of torch._inductor.runtime.triton_heuristics (torch 2.11-2.13; a test enumerates
# them). Grid2DWithYZOverflow folds a y grid past CUDA's limit into z: with YBLOCK kept so that the y grid
# fits (Space.valid), its z extent is 1 and its launch is Grid2D's.
GRID_TYPES: dict[str, GridModel] = {
    "Grid1D": GridModel(1),
    "Grid2D": GridModel(2, kinds=("pointwise",)),
    "Grid2DWithYZOverflow": GridModel(2, kinds=("pointwise",), program_id_axes=frozenset({2})),
    "Grid3D": GridModel(3, kinds=("pointwise",)),
    "BatchMatmulGrid3D": GridModel(None, reason="a batched GEMM template's grid (the GEMM generators' targets)"),
    "MixOrderReductionGrid": GridModel(None, reason="a mix-order reduction's grid depends on RSPLIT_SIZE, "
                                                    "which this generator does not tune"),
    "CooperativeReductionGrid": GridModel(None, reason="a cooperative reduction needs all of its RSPLIT programs "
                                                       "resident at once; its split is not re-tuned"),
    "SplitScanGrid": GridModel(None, reason="a split scan's programs pass partial results to each other"),
    "FixedGrid": GridModel(None, reason="its grid is computed by the caller and passed as arguments"),
    "PrecomputedGrid": GridModel(None, reason="its grid was precomputed for Inductor's own configs only"),
    **dict.fromkeys(("ComboKernelGrid", "SequentialComboKernelGrid", "SequentialFlattenComboKernelGrid",
                     "RoundRobinComboKernelGrid"),
                    GridModel(None, reason="a combo kernel runs several sub-kernels in one launch")),
}
WIDE_JUMP = 3  # distance (in powers of two) from which a move counts as a wide jump


def _pow2_ceil(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _dist(a: int, b: int, log: bool) -> float:
    return abs(math.log2(a) - math.log2(b)) if log else abs(a - b)


@dataclass
class Space:
    """The searchable launch configurations of one kernel."""

    kind: str  # pointwise | reduction | persistent
    values: dict[str, list[int]]  # tunable name (blocks, num_warps handled apart) -> allowed values
    fixed_blocks: dict[str, int]  # blocks the body hard-codes (persistent R0_BLOCK, no_x_dim XBLOCK)
    stages: list[int]
    numels: dict[str, int]  # prefix -> numel
    grid: list[tuple[str, str]]  # (numel param, block name) per grid axis x, y
    baseline: dict[str, int]  # flattened baseline params, {} when unknown
    numel_params: list[str]  # the launch's trailing numel arguments, in signature order

    @property
    def dims(self) -> list[str]:
        return list(self.values) + ["num_warps", "num_stages"]

    def block(self, params: dict[str, int], name: str) -> int:
        return params.get(name, self.fixed_blocks.get(name, 1))

    def valid(self, params: dict[str, int]) -> bool:
        elems = 1
        for name in BLOCK_PREFIX:
            elems *= self.block(params, name)
        cap = max(MAX_BLOCK_NUMEL[self.kind], *self.fixed_blocks.values(), 1)
        threads = params["num_warps"] * 32
        if elems > cap or (threads > max(elems, 32)) or elems > threads * MAX_ELEMS_PER_THREAD:
            return False
        for name in ("YBLOCK", "ZBLOCK"):
            if name in params and -(-self.numels[BLOCK_PREFIX[name]] // params[name]) > MAX_Y_GRID:
                return False
        return True

    def all_configs(self) -> list[dict[str, int]]:
        names = list(self.values)
        out = []
        for combo in itertools.product(*(self.values[n] for n in names), WARPS, self.stages):
            params = dict(zip(names + ["num_warps", "num_stages"], combo, strict=True))
            if self.valid(params):
                out.append(params)
        return out

    def distance(self, a: dict[str, int], b: dict[str, int]) -> float:
        return sum(_dist(a[d], b[d], d != "num_stages") for d in self.dims)

    def config(self, params: dict[str, int]) -> dict[str, Any]:
        return {"kwargs": {n: params[n] for n in self.values},
                "num_warps": params["num_warps"], "num_stages": params["num_stages"]}


def _kind(info: KernelSource) -> str:
    return "persistent" if info.heuristic == "persistent_reduction" else info.heuristic


def build_space(target: KernelTarget) -> Space | str:
    """The search space for `target`, or the reason this generator cannot tune it."""
    if target.is_group:  # a library call with its epilogue: there is no one Triton kernel to re-launch
        return "launch_config re-tunes single Triton kernels, not library groups"
    try:
        info = parse_kernel(target.source, target.name)
    except (SyntaxError, ValueError) as exc:
        return f"cannot parse the kernel source: {exc}"
    kind = _kind(info)
    if kind not in MAX_BLOCK_NUMEL:
        return f"launch_config tunes pointwise and reduction kernels, not {info.heuristic or 'undecorated'} kernels"
    meta = {**info.inductor_meta, **(target.inductor_meta or {})}  # the target's record wins if given
    grid_type = meta.get("grid_type")
    model = GRID_TYPES.get(grid_type) if isinstance(grid_type, str) else None
    if model is None:
        return f"grid type {grid_type} is not one of Inductor's this generator knows ({', '.join(GRID_TYPES)})"
    if model.ndim is None:
        return f"launch_config does not re-launch {grid_type} kernels: {model.reason}"
    if kind not in model.kinds:
        return f"launch_config re-launches {grid_type} kernels of kinds {', '.join(model.kinds)}, not {kind}"
    ndim = model.ndim
    unknown = [p for p in info.constexpr_params if p not in BLOCK_PREFIX]
    if unknown:
        return f"constexpr parameters {unknown} are not modelled"
    if not info.program_id_axes <= set(range(ndim)) | model.program_id_axes:
        return f"the body uses tl.program_id axes {sorted(info.program_id_axes)} beyond the {grid_type} grid"
    runtime = dict(zip(info.numel_params, target.numels, strict=True)) if len(target.numels) == len(info.numel_params) else {}
    block_names = ["XBLOCK", "YBLOCK", "ZBLOCK"][:ndim] + (["R0_BLOCK"] if kind != "pointwise" else [])
    numels: dict[str, int] = {}
    for name in block_names:
        prefix = BLOCK_PREFIX[name]
        numel = info.numel(prefix, runtime)
        if not isinstance(numel, int) or numel < 1:
            return f"{prefix}numel is neither hard-coded nor a known launch argument"
        numels[prefix] = numel
    base = target.baseline_config or {}
    baseline = {k: int(v) for k, v in (base.get("kwargs") or {}).items() if k in info.constexpr_params}
    if base:
        baseline.update(num_warps=int(base.get("num_warps", 4)), num_stages=int(base.get("num_stages", 1)))

    values: dict[str, list[int]] = {}
    fixed: dict[str, int] = {}
    for name in block_names:
        prefix = BLOCK_PREFIX[name]
        if name not in info.constexpr_params:  # the body defines it (persistent R0_BLOCK, no_x_dim XBLOCK)
            fixed[name] = info.body_ints.get(name, 1)
            continue
        numel = numels[prefix]
        if kind == "persistent" and name == "R0_BLOCK":  # a persistent block must cover the whole row
            values[name] = [max(_pow2_ceil(numel), baseline.get(name, 1))]
            continue
        lo, hi = RANGES[(kind, name, ndim)]
        top = _pow2_ceil(numel)  # a block beyond the next power of two only idles threads
        cands = [1 << k for k in range(0, 13) if min(lo, top) <= (1 << k) <= min(hi, top)]
        if not info.masked.get(prefix, False):
            # Inductor elided the bounds mask: only blocks dividing the numel stay in bounds.
            cands = [v for v in cands if numel % v == 0]
        b = baseline.get(name)
        if b and b & (b - 1) == 0 and (info.masked.get(prefix, False) or numel % b == 0):
            cands = sorted(set(cands) | {b})  # the start point belongs to the space even if off-range
        if not cands:
            return f"no power-of-two {name} divides {prefix}numel={numel} (mask elided)"
        values[name] = cands
    if meta.get("no_x_dim") and "XBLOCK" in values:
        values["XBLOCK"] = [1]  # the body assumes one row per program
    stages = list(STAGES) if info.has_loop else [baseline.get("num_stages", 1)]
    grid = [("xnumel", "XBLOCK"), ("ynumel", "YBLOCK"), ("znumel", "ZBLOCK")][:ndim]
    if any(p not in info.numel_params for p, _ in grid):
        return f"the launch has no {[p for p, _ in grid]} numel arguments"
    return Space(kind, values, fixed, stages, numels, grid, baseline, list(info.numel_params))


def _params_key(params: dict[str, Any]) -> tuple:
    return tuple(sorted((k, v) for k, v in params.items()))


def _fmt(params: dict[str, int], space: Space) -> str:
    return " ".join(f"{d}={params[d]}" for d in space.dims if d in params)


class LaunchConfigGenerator:
    """Proposes other block sizes / num_warps / num_stages for Inductor's own kernel."""

    name = "launch_config"

    def applicable(self, target: KernelTarget) -> Optional[str]:
        space = build_space(target)
        return space if isinstance(space, str) else None

    def _center(self, space: Space, beam: list[Attempt]) -> tuple[dict[str, int], Optional[str]]:
        """The best known config: this generator's fastest beam entry, unless the baseline beats it."""
        own = [(a.kernel_ms, a) for a in beam if a.candidate.generator == self.name and a.passed
               and a.kernel_ms is not None and set(space.dims) <= set(a.candidate.params)]
        if own:
            best_ms, best = min(own, key=lambda t: t[0])
            if not (best.baseline_kernel_ms is not None and best.baseline_kernel_ms < best_ms and space.baseline):
                return {d: int(best.candidate.params[d]) for d in space.dims}, best.candidate.id
        if set(space.dims) <= set(space.baseline):
            return dict(space.baseline), None
        # No baseline config known: start from the middle of Inductor's usual defaults.
        return {**{n: v[len(v) // 2] for n, v in space.values.items()}, "num_warps": 4,
                "num_stages": space.stages[0]}, None

    def propose(self, target: KernelTarget, beam: list[Attempt], history: list[Attempt],
                budget: int) -> list[Candidate]:
        space = build_space(target)
        if isinstance(space, str) or budget <= 0:
            return []
        center, parent = self._center(space, beam)
        # Never propose a config twice: not one already evaluated, nor one another
        # chain proposed this iteration (pending), nor Inductor's own.
        seen = {_params_key(a.candidate.params) for a in history if a.candidate.generator == self.name}
        seen |= {_params_key(c.params) for c in getattr(history, "pending", []) if c.generator == self.name}
        if space.baseline:
            seen.add(_params_key(space.baseline))
        dims = space.dims

        def rank(p: dict[str, int]) -> tuple:
            # Nearest first (one power of two in one dimension = coordinate descent),
            # then fewer dimensions changed, then block sizes before warps before
            # stages, larger before smaller: deterministic and explainable.
            changed = [i for i, d in enumerate(dims) if p[d] != center[d]]
            first = changed[0] if changed else len(dims)
            up = p[dims[first]] > center[dims[first]] if changed else True
            return (space.distance(p, center), len(changed), first, not up, tuple(p[d] for d in dims))

        pool = sorted((p for p in space.all_configs() if _params_key(p) not in seen), key=rank)
        if getattr(history, "diversify", False):
            # The search keeps making the same kind of move: jump wide first.
            pool = [p for p in pool if rank(p)[0] >= WIDE_JUMP] + [p for p in pool if rank(p)[0] < WIDE_JUMP]
        baseline_text = f" (baseline {_fmt(space.baseline, space)})" if space.baseline else ""
        out = []
        for params in pool[:budget]:
            source = standalone_module(target.source, target.name, space.config(params), space.numel_params,
                                       [(numel, space.block(params, block)) for numel, block in space.grid])
            out.append(Candidate(target=target.name, source=source, generator=self.name,
                                 description=_fmt(params, space) + baseline_text, params=dict(params),
                                 parent=parent))
        return out
