"""Capture Inductor output modules on a GPU, as test data for the CPU test suite.

    python -m benchmarks.capture_testdata OUTDIR problem.py [problem.py ...]

Each problem gets OUTDIR/<name>/ with baseline_module.py, capture.json and
capture_tensors.pt; the torch and triton versions that made them are in capture.json.
"""
from __future__ import annotations

import sys
from pathlib import Path

from kernelopt.compiled.capture import CaptureRequest, capture_model
from kernelopt.isolation import ChildError, run_in_child


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    failures = 0
    for problem in argv[1:]:
        name = Path(problem).stem
        try:
            cg = run_in_child(capture_model, CaptureRequest(problem, str(out / name)), timeout_s=600,
                              scratch=out / name, read_only=[problem])
            print(f"{name}: {len(cg.args)} args, compile {cg.compile_seconds:.1f} s, "
                  f"bit-exact re-stitch: {cg.restitch_bit_exact}", flush=True)
            failures += not cg.restitch_bit_exact
        except ChildError as exc:
            failures += 1
            print(f"{name}: FAILED {exc}\n{exc.traceback}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
