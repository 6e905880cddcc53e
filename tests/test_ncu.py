"""Nsight Compute profiling (issue 10, item 1): parsing, tiers, and the runner's handling of ncu.

The details CSV below follows the layout checked on the H200 (docs/toolchain-findings.md:
columns, rule rows with an empty metric name, thousands separators, base units); its
numbers are made up. `ncu` itself is not on this machine: the runner is exercised
with stand-in executables (test data, like the deliberately broken kernels) that fail
as ncu fails without counter permissions, or that write a report and export this CSV.
"""
import os
import stat
import sys
from pathlib import Path

from kernelopt.pipeline.report import ncu_lines
from kernelopt.profiling.ncu import (
    NcuRequest,
    find_ncu,
    gpu_profiler_lock,
    ncu_command,
    ncu_profile,
    parse_details_csv,
    tier,
)
from kernelopt.search.strategy import TargetDecision, apply_ncu

# a capture with a Triton kernel (its source is what the cache keys on); nothing runs it here
CAPTURE = Path(__file__).parent / "testdata" / "captured" / "pointwise_gelu_scale"
PROBLEM = Path(__file__).parent / "testdata" / "problems" / "pointwise_gelu_scale.py"
KERNEL = "triton_poi_fused_add_gelu_mul_0"

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type",'
          '"Rule Description","Estimated Speedup Type","Estimated Speedup"')


def _row(launch, kernel, section, metric, unit, value, rule=("", "", "", "", "")):
    cells = [str(launch), "4242", "python3", "127.0.0.1", kernel, "1", "7", "(128, 1, 1)", "(4096, 1, 1)", "0", "9.0",
             section, metric, unit, value, *rule]
    return ",".join(f'"{c}"' for c in cells)


def details_csv(kernel="triton_poi_fused_relu_0") -> str:
    sol, launch, occ, mem = ("GPU Speed Of Light Throughput", "Launch Statistics", "Occupancy",
                             "Memory Workload Analysis")
    rows = [
        "==PROF== Connected to process 4242 (/usr/bin/python3.12)",
        "==PROF== Disconnected from process 4242",
        HEADER,
        _row(0, kernel, sol, "Duration", "second", "0.000012704"),
        _row(0, kernel, sol, "Compute (SM) Throughput", "%", "21.5"),
        _row(0, kernel, sol, "Memory Throughput", "%", "91.25"),
        _row(0, kernel, sol, "DRAM Throughput", "%", "91.25"),
        _row(0, kernel, launch, "Registers Per Thread", "register/thread", "26"),
        _row(0, kernel, launch, "Static Shared Memory Per Block", "byte/block", "0"),
        _row(0, kernel, launch, "Dynamic Shared Memory Per Block", "byte/block", "1,024"),
        _row(0, kernel, occ, "Theoretical Occupancy", "%", "100"),
        _row(0, kernel, occ, "Achieved Occupancy", "%", "87.1"),
        _row(0, kernel, mem, "Memory Throughput", "byte/second", "4,012,000,000,000"),
        _row(0, kernel, "SpeedOfLight", "", "", "", ("SOLBottleneck", "INF", "Memory is busy.", "", "")),
        _row(0, kernel, "MemoryWorkloadAnalysis", "", "", "",
             ("UncoalescedGlobalAccess", "OPT", "Uncoalesced accesses.", "global", "12.5")),
        _row(0, kernel, "Occupancy", "", "", "", ("AchievedOccupancy", "OPT", "Occupancy is low.", "local", "3.1")),
        _row(0, kernel, "LaunchStats", "", "", "", ("TailEffect", "WRN", "A partial wave.", "global", "40")),
        _row(0, kernel, "SchedulerStats", "", "", "", ("IssueSlotUtilization", "OPT", "Few issue slots.", "", "n/a")),
        _row(1, kernel, sol, "Duration", "second", "1.0"),  # a second launch of the same kernel: ignored
        _row(2, "triton_red_fused_sum_1", sol, "Compute (SM) Throughput", "%", "12"),
        _row(2, "triton_red_fused_sum_1", sol, "Memory Throughput", "%", "18"),
    ]
    return "\n".join(rows) + "\n"


def test_details_csv_becomes_kernel_figures_and_top_rules():
    kernels = parse_details_csv(details_csv())
    k = kernels["triton_poi_fused_relu_0"]
    assert abs(k.duration_ms - 0.012704) < 1e-12  # the first launch, base units (seconds) to ms
    assert (k.compute_sol_pct, k.memory_sol_pct, k.registers) == (21.5, 91.25, 26)
    assert (k.achieved_occupancy_pct, k.theoretical_occupancy_pct, k.shared_mem_bytes) == (87.1, 100.0, 1024)
    assert k.dram_bytes_per_s == 4.012e12
    # the top three rules by estimated speedup; INF rules are not advice
    assert [r.name for r in k.rules] == ["TailEffect", "UncoalescedGlobalAccess", "AchievedOccupancy"]
    assert k.rules[0].speedup_pct == 40.0 and k.rules[0].type == "WRN"
    assert (k.tier, k.tier_reason.startswith("compute SOL 22%, memory SOL 91%")) == ("near-optimal", True)
    assert kernels["triton_red_fused_sum_1"].tier == "underutilized"


def test_tiers_follow_the_spec():
    assert tier(85, 10)[0] == "near-optimal"
    assert tier(40, 60)[0] == "memory-bound" and tier(60, 40)[0] == "compute-bound"
    assert tier(10, 20)[0] == "underutilized" and tier(None, 20)[0] == "unprofiled"


def test_no_details_header_is_an_error_not_an_empty_profile():
    try:
        parse_details_csv("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\n")
    except ValueError as exc:
        assert "header" in str(exc)
    else:
        raise AssertionError("no error")


def _executable(path: Path, body: str) -> Path:
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_find_ncu_order(tmp_path):
    assert find_ncu({"KERNELOPT_NCU": str(tmp_path / "missing"), "PATH": ""}) is None
    exe = _executable(tmp_path / "ncu", "print('x')\n")
    assert find_ncu({"PATH": str(tmp_path)}) == str(exe)
    assert find_ncu({"KERNELOPT_NCU": str(exe), "PATH": ""}) == str(exe)
    assert find_ncu({"KERNELOPT_NCU": "off", "PATH": str(tmp_path)}) is None  # the operator's opt-out


def test_without_permission_the_job_is_told_why(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    ncu = _executable(tmp_path / "ncu", (
        "import sys\n"
        "if sys.argv[1:] == ['--version']:\n    print('Version 2025.3.1.0 (stand-in)'); sys.exit(0)\n"
        "print('==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
        "Performance Counters'); sys.exit(1)\n"))
    res = ncu_profile(NcuRequest(str(PROBLEM), str(CAPTURE), [KERNEL], ncu=str(ncu)))
    assert not res.available and "ERR_NVGPUCTRPERM" in res.note and res.kernels == {}
    missing = ncu_profile(NcuRequest(str(PROBLEM), str(CAPTURE), [KERNEL],
                                     ncu=str(tmp_path / "nope")))
    assert not missing.available and "could not run" in missing.note


def test_a_profile_is_parsed_cached_and_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    calls = tmp_path / "calls.txt"
    csv_file = tmp_path / "details.csv"
    kernel = KERNEL
    csv_file.write_text(details_csv(kernel))
    ncu = _executable(tmp_path / "ncu", (
        "import sys, pathlib\n"
        f"pathlib.Path({str(calls)!r}).open('a').write(' '.join(sys.argv[1:]) + '\\n')\n"
        "a = sys.argv[1:]\n"
        "if a == ['--version']:\n    print('NVIDIA (R) Nsight Compute\\nVersion 2025.3.1.0'); sys.exit(0)\n"
        "if a[0] == '-i':\n"
        f"    print(pathlib.Path({str(csv_file)!r}).read_text()); sys.exit(0)\n"
        "out = a[a.index('-o') + 1]\n"
        "pathlib.Path(out + '.ncu-rep').write_bytes(b'report')\n"))
    req = NcuRequest(str(PROBLEM), str(CAPTURE), [kernel], ncu=str(ncu))
    res = ncu_profile(req)
    assert res.available and res.kernels[kernel]["memory_sol_pct"] == 91.25 and res.cached == []
    profiled = [line for line in calls.read_text().splitlines() if "--set full" in line]
    assert len(profiled) == 1 and "--replay-mode kernel" in profiled[0] and "--profile-from-start off" in profiled[0]
    assert f"regex:^({kernel})$" in profiled[0] and "kernelopt.profiling.ncu_target" in profiled[0]
    again = ncu_profile(req)  # the same kernel source in this job: from the cache, no replay
    assert again.cached == [kernel] and again.kernels == res.kernels
    assert len([line for line in calls.read_text().splitlines() if "--set full" in line]) == 1
    md = "\n".join(ncu_lines({"note": again.note, "kernels": again.kernels}))
    assert "## Nsight Compute" in md and "| near-optimal | 22% | 91% | 0.0127 | 26 | 87% | 1024 | TailEffect (40%) |" in md


def test_ncu_tiers_inform_decisions_without_skipping():
    d = TargetDecision("k", "pointwise", 0.6, True, "60.0% of GPU time")
    apply_ncu([d], {"k": {"tier": "near-optimal", "tier_reason": "compute SOL 10%, memory SOL 92%"}})
    assert d.searched and d.tier == "near-optimal" and "ncu: near-optimal (compute SOL 10%" in d.reason
    assert d.ncu and d.ncu["tier"] == "near-optimal"


def test_command_and_lock():
    cmd = ncu_command("ncu", Path("/s/r"), ["a", "b"], ["python", "-m", "t"])
    assert cmd[:3] == ["ncu", "--clock-control", "none"] and "regex:^(a|b)$" in cmd and cmd[-3:] == ["python", "-m", "t"]
    with gpu_profiler_lock(lock_dir=os.environ.get("TMPDIR", "/tmp")):
        pass  # taken and released; a second holder would wait (flock)


def test_short_unit_spellings_parse_and_an_unknown_unit_is_named():
    sol, mem = "GPU Speed Of Light Throughput", "Memory Workload Analysis"
    text = "\n".join([HEADER,
                      _row(0, "k_short", sol, "Duration", "us", "12.5"),
                      _row(0, "k_short", mem, "Memory Throughput", "Gbyte/s", "3,900"),
                      _row(0, "k_odd", sol, "Duration", "cycle", "4096"),
                      _row(0, "k_odd", mem, "Memory Throughput", "furlong/s", "1")]) + "\n"
    kernels = parse_details_csv(text)
    assert abs(kernels["k_short"].duration_ms - 0.0125) < 1e-12 and kernels["k_short"].dram_bytes_per_s == 3.9e12
    assert kernels["k_short"].unparsed_units == {}
    odd = kernels["k_odd"]
    assert odd.duration_ms is None and odd.unparsed_units == {"Duration": "cycle", "Memory Throughput": "furlong/s"}
