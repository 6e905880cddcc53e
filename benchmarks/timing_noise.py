"""How noisy is the timing harness on a problem? A/A rounds of the compiled model against itself.

    python -m benchmarks.timing_noise benchmarks/problems/level1/24_max_pool3d.py [...] --out noise.json

Gate 4 compares two sides timed by `core.timing.bench_interleaved` (one `do_bench` median per
side per round, rounds interleaved) and calls a result "within noise" when |speedup - 1| is at most the
robust spread of the per-round speedups. Here both sides are the same compiled model, so every
per-round speedup away from 1 is noise. Each harness setting (rounds x rep_ms) is run twice, to see how
much the noise figure itself moves; every per-round median is kept in the output.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

import torch

from kernelopt.core.timing import bench_interleaved, robust_spread_pct
from kernelopt.load.problem import build_model, import_problem, make_inputs

SETTINGS = ((5, 100.0), (5, 100.0), (15, 30.0), (15, 30.0), (25, 100.0))


def study(path: Path) -> dict:
    mod = import_problem(path)  # the engine's own loading: seeds, device placement, fp32 cast
    model = build_model(mod, "cuda", torch.float32).eval()
    inputs = make_inputs(mod, 0, "cuda", torch.float32)
    compiled = torch.compile(model)
    with torch.no_grad():
        compiled(*inputs)
        torch.cuda.synchronize()
        runs: list[dict[str, Any]] = []
        for rounds, rep in SETTINGS:
            t = bench_interleaved({"a": lambda: compiled(*inputs), "b": lambda: compiled(*inputs)},
                                  rounds=rounds, rep_ms=rep)
            ratios = [a / b for a, b in zip(t.rounds["a"], t.rounds["b"], strict=True)]
            spread = robust_spread_pct(ratios)
            runs.append({"rounds": rounds, "rep_ms": rep, "a_ms": t.rounds["a"], "b_ms": t.rounds["b"],
                         "aa_speedup": statistics.median(t.rounds["a"]) / statistics.median(t.rounds["b"]),
                         "ratio_spread_pct": spread,
                         # the spread of a median of n rounds: 1.2533 sigma / sqrt(n)
                         "median_se_pct": 1.2533 * spread / math.sqrt(rounds),
                         "side_spread_pct": [robust_spread_pct(t.rounds["a"]), robust_spread_pct(t.rounds["b"])]})
            print(f"{path.stem}: {rounds:>2} rounds x {rep:>5.0f} ms: A/A {runs[-1]['aa_speedup']:.4f}x, "
                  f"per-round ratio spread {spread:.2f}%, median's {runs[-1]['median_se_pct']:.2f}%, "
                  f"sides {runs[-1]['side_spread_pct'][0]:.2f}%/{runs[-1]['side_spread_pct'][1]:.2f}%", flush=True)
    return {"problem": str(path), "runs": runs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problems", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=Path("timing_noise.json"))
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("timing_noise: needs a CUDA GPU (there is no meaningful time without one)", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    results = []
    for p in args.problems:
        results.append(study(p))
        args.out.write_text(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                                        "results": results}, indent=1))
        torch.compiler.reset()
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
