"""Where a network's max-autotune compile time goes: Inductor as it ships, with the shared ptxas, and as a job's
sandboxed capture (issue 37).

    python -m benchmarks.compile_time_probe benchmarks/problems/level3/12_resnet18.py --out DIR [--limit-s 270]
                                            [--arms plain,plain-shared-ptxas,sandboxed] [--device cpu]

On an H100 ResNet-18's capture did not finish in 502 s: Inductor's autotuning of one convolution shape took
48-98 s for 17-18 choices while it reported 0.0003 s of precompiling (benchmarks/results/2026-12-07-h100-cudnn-
helion-resnet). Each arm starts from empty caches:

- `plain`: `torch.compile(mode="max-autotune-no-cudagraphs")` of the model in a plain subprocess of this
  machine's Python (no sandbox, no capture), Inductor's compile pool started and waited for first: Inductor as
  it ships;
- `plain-shared-ptxas`: the same, the compiling process first set to the compile workers' ptxas
  (compiled/compile_pool.py says why: the suspected cause);
- `sandboxed`: `capture_model` in a sandboxed child, as a job's compile stage runs it (ptxas shared).

Each arm is bounded by `--limit-s`; one cut at its limit still reports what it printed. Per arm: compile seconds
(or that it did not finish), the compile pool it had, and from Inductor's own log lines how many shapes it
autotuned and the seconds it reported benchmarking and precompiling them (seconds per choice is the measure).
The plain arms also report the ptxas torch bundles and the Triton cache's binaries: a kernel compiled under
several cache keys is one the compiling process compiled again instead of loading a worker's. On a GPU,
ResNet-18 at `--limit-s 270` with the two plain arms fits one 10-minute device call. Writes
DIR/compile_time_probe.json.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kernelopt.compiled.autotune_log import AutotuneSummary
from kernelopt.compiled.capture import CaptureRequest, capture_model
from kernelopt.isolation import ChildError, run_in_child

_PLAIN = r"""
import json, sys, time
from pathlib import Path
import torch
from torch._inductor.runtime import compile_tasks
from kernelopt.compiled.compile_pool import start_compile_pool
from kernelopt.load.problem import build_model, import_problem, make_inputs

mod, device, share_ptxas = import_problem(sys.argv[1]), sys.argv[2], sys.argv[3] == "share"
model = build_model(mod, device, torch.float32)
inputs = make_inputs(mod, 0, device, torch.float32)
pool = start_compile_pool(share_ptxas=share_ptxas)
print(pool.describe(), file=sys.stderr, flush=True)
t0 = time.perf_counter()
with torch.no_grad():
    compiled = torch.compile(model, mode="max-autotune-no-cudagraphs", fullgraph=True, dynamic=False)
    compiled(*inputs)
if device == "cuda":
    torch.cuda.synchronize()
candidates = [Path(compile_tasks.__file__).absolute().parents[i] / "bin" / "ptxas" for i in (1, 2)]
print(json.dumps({"compile_s": round(time.perf_counter() - t0, 1), "pool": pool.to_dict(),
                  "bundled_ptxas": [str(p) for p in candidates if p.is_file()]}), flush=True)
"""

def triton_cache_stats(cache: Path) -> dict:
    """Compiled binaries in a Triton cache, and how many kernels were compiled under more than one cache key (the
    same kernel name in several key directories: the compiling process did not find a worker's binary)."""
    keys_of: dict[str, int] = {}
    for binary in cache.glob("*/*.cubin"):
        keys_of[binary.stem] = keys_of.get(binary.stem, 0) + 1
    return {"cubins": sum(keys_of.values()), "kernels": len(keys_of),
            "compiled_under_several_keys": sum(1 for n in keys_of.values() if n > 1)}


def plain(problem: Path, scratch: Path, limit_s: float, device: str, share_ptxas: bool = False) -> dict:
    arm = "plain-shared-ptxas" if share_ptxas else "plain"
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(scratch / "inductor"),
           "TRITON_CACHE_DIR": str(scratch / "triton"), "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    t0 = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-c", _PLAIN, str(problem), device,
                               "share" if share_ptxas else "keep"], env=env, capture_output=True, text=True,
                              timeout=limit_s)
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        return {"arm": arm, "finished": False, "wall_s": round(time.monotonic() - t0, 1),
                "autotune": AutotuneSummary.of(err).to_dict(), "pool_line": _pool_line(err),
                "triton_cache": triton_cache_stats(scratch / "triton")}
    row = {"arm": arm, "finished": proc.returncode == 0, "wall_s": round(time.monotonic() - t0, 1),
           "autotune": AutotuneSummary.of(proc.stderr).to_dict(), "pool_line": _pool_line(proc.stderr),
           "triton_cache": triton_cache_stats(scratch / "triton")}
    line = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("{")), None)
    if line:
        row.update(json.loads(line))
    if proc.returncode:
        row["error"] = proc.stderr.strip()[-1500:]
    return row


def sandboxed(problem: Path, workdir: Path, limit_s: float, device: str) -> dict:
    t0 = time.monotonic()
    try:
        cg = run_in_child(capture_model, CaptureRequest(str(problem), str(workdir), "fp32", device,
                                                        context_timing=False),
                          timeout_s=limit_s, scratch=workdir, read_only=(problem.parent,))
    except ChildError as exc:
        return {"arm": "sandboxed", "finished": False, "wall_s": round(time.monotonic() - t0, 1),
                "error": f"{exc.kind}: {exc.message}"[:1500],
                "note": "Inductor's autotune lines are in this command's stderr (the child's, forwarded)"}
    return {"arm": "sandboxed", "finished": True, "wall_s": round(time.monotonic() - t0, 1),
            "compile_s": cg.compile_seconds, "pool": cg.compile_pool, "autotune": cg.autotune}


def _pool_line(log: str) -> str:
    return next((ln for ln in log.splitlines() if ln.startswith("compile: ")), "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("problem")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--limit-s", type=float, default=270.0)
    ap.add_argument("--arms", default="plain,plain-shared-ptxas,sandboxed")
    ap.add_argument("--device", default="cuda", help="cpu: a smoke run on Inductor's C++ backend")
    args = ap.parse_args(argv)
    problem = Path(args.problem).resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="compile-time-") as tmp:
        os.chmod(tmp, 0o711)  # as root, the sandboxed child runs as a uid of its own and must reach its scratch
        for arm in args.arms.split(","):
            scratch = Path(tmp) / arm
            scratch.mkdir()
            if arm == "sandboxed":
                row = sandboxed(problem, scratch, args.limit_s, args.device)
            else:
                row = plain(problem, scratch, args.limit_s, args.device, share_ptxas=arm == "plain-shared-ptxas")
            rows.append({"problem": problem.name, **row})
            print(json.dumps(rows[-1]), flush=True)
            (args.out / "compile_time_probe.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
