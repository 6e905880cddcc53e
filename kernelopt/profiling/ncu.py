"""Nsight Compute per Triton kernel of the baseline (docs/architecture.md, 4. Profile), when `ncu` is there.

One `ncu` run per job profiles the kernels asked for: kernel replay (each kernel
replayed alone, `--set full`), clocks as found, and only the one model call that
profiling/ncu_target.py brackets with cudaProfilerStart/Stop (its warm-up call runs
Inductor's autotuners, which launch the same kernel names). The details page is
exported as CSV (`--print-units base`) and parsed into `NcuKernel`s: compute and
memory Speed-of-Light %, duration, registers, occupancy, shared memory, achieved
DRAM bandwidth, and the top rules with their estimated speedup. The CSV layout and
the metric labels are those checked on the H200 (docs/toolchain-findings.md).

`ncu_profile` runs inside the job's sandboxed child (the target executes code
derived from the submission); ncu is its subprocess there. Results are cached in
the job's cache directory by the kernel's source hash (and ncu version and device),
so a kernel profiled once in a job is not replayed again. Profiling is serialized
per GPU by the caller (`gpu_profiler_lock`): ncu's replay needs the device alone.
Without ncu, or when it fails, the job says so and goes on with its
torch.profiler profile.
"""
from __future__ import annotations

import csv
import fcntl
import glob
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator, Mapping

from kernelopt.compiled.decompose import decompose
from kernelopt.compiled.graph import CapturedGraph

# Labels of the details page (section "GPU Speed Of Light Throughput" etc.) -> our fields.
SOL_SECTION = "GPU Speed Of Light Throughput"
MEMORY_SECTION = "Memory Workload Analysis"
TOP_RULES = 3
NEAR_OPTIMAL_SOL = 80.0  # the tier's cut (docs/architecture.md, 4. Profile)
UNDERUTILIZED_SOL = 30.0  # both SOLs below this: neither unit is the limit
RUN_TIMEOUT_S = 900


@dataclass
class NcuRule:
    name: str
    type: str  # INF | OPT | WRN
    description: str
    speedup_type: str  # local | global | "" (ncu's estimate, in percent)
    speedup_pct: float | None


@dataclass
class NcuKernel:
    name: str
    duration_ms: float | None = None
    compute_sol_pct: float | None = None
    memory_sol_pct: float | None = None
    dram_sol_pct: float | None = None
    registers: int | None = None
    achieved_occupancy_pct: float | None = None
    theoretical_occupancy_pct: float | None = None
    shared_mem_bytes: int | None = None  # static + dynamic per block
    dram_bytes_per_s: float | None = None
    block_size: str = ""
    grid_size: str = ""
    rules: list[NcuRule] = field(default_factory=list)  # the top rules by estimated speedup
    tier: str = ""
    tier_reason: str = ""
    # metric -> the unit text of a value this parser could not convert (so the report shows why a figure
    # is missing instead of a silent None)
    unparsed_units: dict[str, str] = field(default_factory=dict)


@dataclass
class NcuRequest:
    problem_path: str
    workdir: str
    kernels: list[str]
    dtype: str = "fp32"
    ncu: str | None = None  # the executable; None: find_ncu()
    timeout_s: float = RUN_TIMEOUT_S


@dataclass
class NcuResult:
    available: bool
    note: str  # what happened, for the report: "profiled N kernels in S s", or why not
    kernels: dict[str, dict] = field(default_factory=dict)  # name -> asdict(NcuKernel)
    seconds: float = 0.0
    ncu_version: str = ""
    cached: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- parsing

def number(text: str) -> float | None:
    """ncu's number text ("12,704", "1.5", "n/a") as a float, None when it is not one."""
    t = (text or "").strip().replace(",", "")
    try:
        return float(t)
    except ValueError:
        return None


# ncu spells units both ways across releases ("nsecond" and "ns", "byte/second" and "byte/s"); on the
# H200's ncu 2025.3.1 with `--print-units base`, neither Duration nor the byte rate parsed with the long
# spellings alone (both came back None on the GPU).
_TIME_UNITS = {"second": 1e3, "s": 1e3, "msecond": 1.0, "ms": 1.0, "usecond": 1e-3, "us": 1e-3,
               "nsecond": 1e-6, "ns": 1e-6}
_BYTE_UNITS = {"byte": 1, "B": 1, "Kbyte": 1e3, "KB": 1e3, "Mbyte": 1e6, "MB": 1e6, "Gbyte": 1e9, "GB": 1e9,
               "Tbyte": 1e12, "TB": 1e12, "Kibyte": 1024, "KiB": 1024, "Mibyte": 1024 ** 2, "MiB": 1024 ** 2}
_RATE_SUFFIXES = ("/second", "/s")


def _ms(value: float | None, unit: str) -> float | None:
    return None if value is None or unit not in _TIME_UNITS else value * _TIME_UNITS[unit]


def _bytes(value: float | None, unit: str) -> float | None:
    unit = unit.removesuffix("/block")  # shared memory is stated per block
    return None if value is None or unit not in _BYTE_UNITS else value * _BYTE_UNITS[unit]


def _is_rate(unit: str) -> bool:
    return unit.endswith(_RATE_SUFFIXES)


def _per_second(value: float | None, unit: str) -> float | None:
    suffix = next((s for s in _RATE_SUFFIXES if unit.endswith(s)), None)
    if value is None or suffix is None:
        return None
    scale = _bytes(1.0, unit.removesuffix(suffix))
    return None if scale is None else value * scale


def parse_details_csv(text: str) -> dict[str, NcuKernel]:
    """`ncu --csv --page details` text -> one NcuKernel per kernel name (its first profiled launch).

    Lines before the header (`==PROF==` messages, the program's own output) are skipped.
    Raises ValueError when there is no details header at all.
    """
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"') and '"Metric Name"' in line), None)
    if start is None:
        raise ValueError("no ncu details CSV header in the output")
    kernels: dict[str, NcuKernel] = {}
    first_id: dict[str, str] = {}
    rules: dict[str, list[NcuRule]] = {}
    static = dynamic = None
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        name = (row.get("Kernel Name") or "").strip()
        if not name:
            continue
        launch = row.get("ID", "")
        if first_id.setdefault(name, launch) != launch:
            continue  # a later launch of the same kernel
        k = kernels.setdefault(name, NcuKernel(name, block_size=row.get("Block Size", ""),
                                                grid_size=row.get("Grid Size", "")))
        metric, section = (row.get("Metric Name") or "").strip(), (row.get("Section Name") or "").strip()
        unit, value = (row.get("Metric Unit") or "").strip(), number(row.get("Metric Value", ""))
        if not metric:
            rule = (row.get("Rule Name") or "").strip()
            if rule:
                rules.setdefault(name, []).append(NcuRule(
                    rule, (row.get("Rule Type") or "").strip(), (row.get("Rule Description") or "").strip(),
                    (row.get("Estimated Speedup Type") or "").strip(), number(row.get("Estimated Speedup", ""))))
            continue
        if metric == "Duration":
            k.duration_ms = _ms(value, unit)
            if k.duration_ms is None:
                k.unparsed_units[metric] = unit
        elif metric == "Compute (SM) Throughput" and section == SOL_SECTION:
            k.compute_sol_pct = value
        elif metric == "Memory Throughput" and section == SOL_SECTION:
            k.memory_sol_pct = value
        elif metric == "DRAM Throughput" and section == SOL_SECTION:
            k.dram_sol_pct = value
        elif metric == "Memory Throughput" and _is_rate(unit):
            k.dram_bytes_per_s = _per_second(value, unit)
            if k.dram_bytes_per_s is None:
                k.unparsed_units[metric] = unit
        elif metric == "Registers Per Thread" and value is not None:
            k.registers = int(value)
        elif metric == "Achieved Occupancy":
            k.achieved_occupancy_pct = value
        elif metric == "Theoretical Occupancy":
            k.theoretical_occupancy_pct = value
        elif metric == "Static Shared Memory Per Block":
            static = _bytes(value, unit)
        elif metric == "Dynamic Shared Memory Per Block":
            dynamic = _bytes(value, unit)
        if static is not None and dynamic is not None:
            k.shared_mem_bytes = int(static + dynamic)
            static = dynamic = None
    for name, k in kernels.items():
        ranked = sorted(rules.get(name, []), key=lambda r: -(r.speedup_pct or 0.0))
        k.rules = [r for r in ranked if r.type != "INF"][:TOP_RULES]
        k.tier, k.tier_reason = tier(k.compute_sol_pct, k.memory_sol_pct)
    return kernels


def tier(compute_sol: float | None, memory_sol: float | None) -> tuple[str, str]:
    """The tier from the two Speed-of-Light percentages, with the reason (docs/architecture.md, 4. Profile)."""
    if compute_sol is None or memory_sol is None:
        return "unprofiled", "ncu gave no Speed-of-Light figures"
    text = f"compute SOL {compute_sol:.0f}%, memory SOL {memory_sol:.0f}%"
    if max(compute_sol, memory_sol) > NEAR_OPTIMAL_SOL:
        return "near-optimal", f"{text}: a unit runs above {NEAR_OPTIMAL_SOL:.0f}% of its peak"
    if max(compute_sol, memory_sol) < UNDERUTILIZED_SOL:
        return "underutilized", f"{text}: neither unit is busy (latency, launch or occupancy bound)"
    if memory_sol >= compute_sol:
        return "memory-bound", text
    return "compute-bound", text


# --------------------------------------------------------------------------- running

def find_ncu(environ: Mapping[str, str] | None = None) -> str | None:
    """KERNELOPT_NCU (a path, or "off"), else `ncu` on PATH, else the usual install places."""
    env = os.environ if environ is None else environ
    explicit = env.get("KERNELOPT_NCU")
    if explicit == "off":
        return None
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    found = shutil.which("ncu", path=env.get("PATH"))
    if found:
        return found
    for pattern in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda-*/bin/ncu"):
        for path in sorted(glob.glob(pattern), reverse=True):
            if os.access(path, os.X_OK):
                return path
    return None


def _first_line(text: str) -> str:
    lines = [line for line in (text or "").splitlines() if line.strip()]
    errors = [line for line in lines if "ERR" in line or "rror" in line]
    return ((errors or lines or ["(no output)"])[0]).strip()[:300]


def _cache_root(req: NcuRequest) -> Path:
    """The job's cache directory (the sandbox sets XDG_CACHE_HOME inside the job's scratch)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path(req.workdir) / ".cache")


def _cache_key(source: str, device: str, version: str) -> str:
    return hashlib.sha256(f"{version}\n{device}\n{source}".encode()).hexdigest()[:24]


def ncu_profile(req: NcuRequest) -> NcuResult:
    """Profile `req.kernels` of the captured baseline with ncu (runs in the job's sandboxed child)."""
    exe = req.ncu or find_ncu()
    if exe is None:
        return NcuResult(False, "ncu not found (KERNELOPT_NCU, PATH, /usr/local/cuda/bin, /opt/nvidia): "
                                "the profile is torch.profiler's alone")
    t0 = time.monotonic()
    try:
        version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return NcuResult(False, f"ncu could not run: {exc}")
    version = version.strip().splitlines()[-1].strip()[:100] if version.strip() else "unknown version"
    cg = CapturedGraph.load(req.workdir)
    sources = {n: k.source for n, k in decompose(Path(cg.module_path).read_text()).kernels.items()}
    device = cg.device_name
    cache_dir = _cache_root(req) / "ncu"
    cache_dir.mkdir(parents=True, exist_ok=True)
    out: dict[str, dict] = {}
    cached = []
    todo = []
    for name in req.kernels:
        path = cache_dir / f"{_cache_key(sources.get(name, name), device, version)}.json"
        if path.is_file():
            out[name] = json.loads(path.read_text())
            cached.append(name)
        elif name in sources:
            todo.append(name)
    if todo:
        found, problem = _run_ncu(exe, req, todo)
        if problem:
            return NcuResult(False, problem, out, time.monotonic() - t0, version, cached)
        for name in todo:
            if name in found:
                out[name] = asdict(found[name])
                path = cache_dir / f"{_cache_key(sources[name], device, version)}.json"
                path.write_text(json.dumps(out[name]))
    missing = [n for n in req.kernels if n not in out]
    seconds = time.monotonic() - t0
    note = (f"ncu {version}: {len(out)} kernel(s) profiled in {seconds:.1f} s ({len(cached)} from this job's cache)"
            + (f"; not found in the profile: {', '.join(missing)}" if missing else ""))
    return NcuResult(True, note, out, seconds, version, cached)


def ncu_command(exe: str, report: Path, kernels: list[str], target: list[str]) -> list[str]:
    """The profiling command line (docs/toolchain-findings.md: checked on the H200)."""
    pattern = "regex:^(" + "|".join(kernels) + ")$"
    return [exe, "--clock-control", "none", "--profile-from-start", "off", "--replay-mode", "kernel",
            "--set", "full", "--kernel-name", pattern, "--target-processes", "all", "-f", "-o", str(report),
            *target]


def _run_ncu(exe: str, req: NcuRequest, kernels: list[str]) -> tuple[dict[str, NcuKernel], str | None]:
    scratch = _cache_root(req) / "ncu-run"
    scratch.mkdir(parents=True, exist_ok=True)
    report = scratch / "baseline"
    target = [sys.executable, "-m", "kernelopt.profiling.ncu_target", req.problem_path, req.workdir, req.dtype]
    env = dict(os.environ, TMPDIR=str(scratch))
    try:
        run = subprocess.run(ncu_command(exe, report, kernels, target), capture_output=True, text=True,
                             timeout=req.timeout_s, env=env)
        if run.returncode != 0 or not report.with_suffix(".ncu-rep").is_file():
            return {}, f"ncu failed (exit {run.returncode}): {_first_line(run.stdout + run.stderr)}"
        export = subprocess.run([exe, "-i", str(report.with_suffix(".ncu-rep")), "--csv", "--page", "details",
                                 "--print-units", "base"], capture_output=True, text=True, timeout=300, env=env)
    except subprocess.TimeoutExpired:
        return {}, f"ncu took longer than {req.timeout_s:.0f} s"
    except OSError as exc:
        return {}, f"ncu could not run: {exc}"
    # kept beside the report: what was parsed can be read again when a figure comes back missing
    (scratch / "details.csv").write_text(export.stdout)
    try:
        return parse_details_csv(export.stdout), None
    except ValueError as exc:
        return {}, f"ncu's export could not be read: {exc}: {_first_line(export.stdout + export.stderr)}"


@contextmanager
def gpu_profiler_lock(lock_dir: str = "/tmp") -> Iterator[None]:
    """One ncu at a time per GPU set this process sees (CUDA_VISIBLE_DEVICES; a worker has one
    GPU), across jobs and uids: flock on a world-readable file."""
    visible = "".join(c if c.isalnum() else "_" for c in os.environ.get("CUDA_VISIBLE_DEVICES", "all"))
    path = Path(lock_dir) / f"kernelopt-ncu-gpu-{visible or 'none'}.lock"
    old = os.umask(0o022)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
    finally:
        os.umask(old)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
