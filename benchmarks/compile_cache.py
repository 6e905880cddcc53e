"""A model's capture compiled cold, then again from the first one's kept compiler caches (isolation.compile_cache).

    python -m benchmarks.compile_cache benchmarks/problems/level3/19_mingpt_block.py [--runs 2] [--out cc.json]
                                       [--serial-first]

Each capture runs as a job's compile stage does: `capture_model` in a sandboxed child whose scratch holds
the caches (`<workdir>/.cache`), lent from one slot and taken back after. Prints, per run, the files it
started from, Inductor's compile time, the child's wall time, whether the re-executed module reproduced the
compiled output bit for bit, and whether the module's source matches the first run's; a run whose capture
fails is recorded with its traceback, and the runs stop there.

`--serial-first` adds a cold capture before them, from an empty slot of its own, with Inductor's compile
workers off (TORCHINDUCTOR_COMPILE_THREADS=1: every kernel compiled in the child, one after another, as
every sandboxed compile was before the sandbox gave its children a writable /dev/shm): the cold pooled run
that follows is its side-by-side comparison.
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
    ap.add_argument("--serial-first", action="store_true",
                    help="first a cold capture with Inductor's compile workers off, from a slot of its own")
    args = ap.parse_args(argv)
    problem = Path(args.problem).resolve()
    rows: list[dict] = []
    runs: list[tuple[str, str, dict[str, str]]] = [(f"run{i}", "slot", {}) for i in range(args.runs)]
    if args.serial_first:
        runs.insert(0, ("serial", "serial-slot", {"TORCHINDUCTOR_COMPILE_THREADS": "1"}))
    with tempfile.TemporaryDirectory(prefix="compile-cache-") as tmp:
        os.chmod(tmp, 0o711)  # as root, the sandboxed child runs as a uid of its own and must reach its scratch
        first = None
        for name, slot, env in runs:
            workdir = Path(tmp) / name
            t0 = time.monotonic()
            with lent(Path(tmp) / slot, workdir) as found:
                try:
                    cg = run_in_child(capture_model, CaptureRequest(str(problem), str(workdir), args.dtype,
                                                                    args.device),
                                      timeout_s=1800, env=env, scratch=workdir, read_only=(problem.parent,))
                except ChildError as exc:  # recorded whole: which cache entry broke it is the question
                    rows.append({"run": name, "cache_files": found.files, "error": exc.message,
                                 "traceback": exc.traceback[-6000:]})
                    print(json.dumps(rows[-1], indent=1), flush=True)
                    break
            source = Path(cg.module_path).read_text()
            first = source if first is None else first
            rows.append({"run": name, "compile_workers": "off" if env else "Inductor's default",
                         "cache_files": found.files, "cache_mb": round(found.bytes / 2**20, 1),
                         "compile_s": round(cg.compile_seconds, 1), "wall_s": round(time.monotonic() - t0, 1),
                         "bit_exact": cg.restitch_bit_exact, "same_module": source == first})
            print(json.dumps(rows[-1]), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"problem": str(args.problem), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
