"""Whether Inductor's pool of compile workers starts in a job's sandboxed child (issue 37).

    python -m benchmarks.compile_pool_probe [--wait-s 120]

Starts one child the way a job's stages are started (the sandbox, its uid, rlimits and environment), has it
start Inductor's compile pool and wait for it (compiled/compile_pool.py, what every capture does first), and
prints what it got next to what this process gets outside the sandbox.
"""
from __future__ import annotations

import argparse
import json

from kernelopt.compiled.compile_pool import start_compile_pool
from kernelopt.isolation.child import job_sandbox, run_in_child


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--wait-s", type=float, default=120.0)
    args = parser.parse_args()
    with job_sandbox() as held:
        child = run_in_child(start_compile_pool, args.wait_s, timeout_s=args.wait_s + 120, uid=held.uid)
    print(json.dumps({"sandboxed child": child.to_dict(), "this process": start_compile_pool(args.wait_s).to_dict()}))


if __name__ == "__main__":
    main()
