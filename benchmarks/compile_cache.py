"""A model's capture compiled cold, then again from the first one's kept compiler caches (isolation.compile_cache).

    python -m benchmarks.compile_cache benchmarks/problems/level3/19_mingpt_block.py [--runs 2] [--out cc.json]

Each capture runs as a job's compile stage does: `capture_model` in a sandboxed child whose scratch holds
the caches (`<workdir>/.cache`), lent from one slot and taken back after. Prints, per run, the files it
started from, Inductor's compile time, the child's wall time, whether the re-executed module reproduced the
compiled output bit for bit, and whether the module's source matches the first run's; a run whose capture
fails is recorded with its traceback, and the runs stop there.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from kernelopt.compiled.capture import CaptureRequest, capture_model
from kernelopt.isolation import ChildError, run_in_child
from kernelopt.isolation.compile_cache import lent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problem")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="fp32")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    problem = Path(args.problem).resolve()
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="compile-cache-") as tmp:
        os.chmod(tmp, 0o711)  # as root, the sandboxed child runs as a uid of its own and must reach its scratch
        slot, first = Path(tmp) / "slot", None
        for i in range(args.runs):
            workdir = Path(tmp) / f"run{i}"
            t0 = time.monotonic()
            with lent(slot, workdir) as found:
                try:
                    cg = run_in_child(capture_model, CaptureRequest(str(problem), str(workdir), args.dtype,
                                                                    args.device),
                                      timeout_s=1800, scratch=workdir, read_only=(problem.parent,))
                except ChildError as exc:  # recorded whole: which cache entry broke it is the question
                    rows.append({"run": i, "cache_files": found.files, "error": exc.message,
                                 "traceback": exc.traceback[-6000:]})
                    print(json.dumps(rows[-1], indent=1), flush=True)
                    break
            source = Path(cg.module_path).read_text()
            first = source if first is None else first
            rows.append({"run": i, "cache_files": found.files, "cache_mb": round(found.bytes / 2**20, 1),
                         "compile_s": round(cg.compile_seconds, 1), "wall_s": round(time.monotonic() - t0, 1),
                         "bit_exact": cg.restitch_bit_exact, "same_module": source == first})
            print(json.dumps(rows[-1]), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"problem": str(args.problem), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
