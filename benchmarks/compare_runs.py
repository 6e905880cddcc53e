"""Two `kernelopt bench` runs side by side: fp32 strict vs tf32, fp32 vs bf16, before vs after.

    python benchmarks/compare_runs.py RUN_A RUN_B [--out compare.md] [--json]

RUN_A and RUN_B are bench.json files (or the directories holding them). Per
problem: each run's outcome, deployed speedup vs its own compiler baseline, and
deployed time; where both runs measured a time, how much faster B's deployed
model ran than A's (t_A / t_B: a bf16 run against an fp32 run, say — the two
baselines differ, so the speedups alone do not say it). Geomeans per level count
measured speedups only (a problem not measured — no GPU, or failed — is left
out and counted), and are given also over the problems both runs measured,
the only fair like-for-like. Nothing is shown for a speed that was not measured.

Each run says its dtype, precision policy and device (bench.json; runs written
before bench.json stated them were fp32, and their policy is their jobs').
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from kernelopt.pipeline.bench import RunSettings, _geomean, deployed_speedup


@dataclass
class Run:
    path: str
    settings: RunSettings
    device: str
    rows: dict[str, dict]  # problem -> bench row

    def label(self) -> str:
        return f"{self.settings.dtype} {self.settings.precision}"


def load_run(path: str | Path) -> Run:
    p = Path(path)
    p = p / "bench.json" if p.is_dir() else p
    try:
        summary = json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"compare_runs: {path}: not a readable bench.json ({exc})") from None
    header = re.match(r"# kernelopt bench \(\d+ problems, \d+ GPU\(s\), ([^,]+),", summary.get("text") or "")
    device = summary.get("device") or (header.group(1) if header else "unknown device")
    return Run(str(p), RunSettings.of_summary(summary), device, {r["problem"]: r for r in summary.get("rows") or []})


def deployed_ms(row: Optional[dict]) -> Optional[float]:
    """The deployed model's measured time: the optimized one's where it was deployed, else the baseline's."""
    if row is None or deployed_speedup(row) is None:
        return None
    r = row["result"]
    ms = r.get("optimized_ms") if r["outcome"] == "optimized" else r.get("baseline_ms")
    return float(ms) if ms else None


def _geo(values: list[Optional[float]]) -> tuple[Optional[float], int]:
    measured = [v for v in values if v is not None]
    return (_geomean(measured) if measured else None), len(measured)


def compare(a: Run, b: Run) -> dict:
    problems = sorted(set(a.rows) | set(b.rows))
    rows = []
    for p in problems:
        ra, rb = a.rows.get(p), b.rows.get(p)
        ta, tb = deployed_ms(ra), deployed_ms(rb)
        rows.append({"problem": p, "level": (ra or rb or {}).get("level", "all"),
                     "a": _side(ra), "b": _side(rb), "a_ms": ta, "b_ms": tb,
                     "b_vs_a_time": (ta / tb) if ta and tb else None})
    geomeans = {}
    for level in sorted({r["level"] for r in rows}) + ["all"]:
        sel = [r for r in rows if level == "all" or r["level"] == level]
        both = [r for r in sel if r["a"]["speedup"] is not None and r["b"]["speedup"] is not None]
        geomeans[level] = {
            "a": _geo([r["a"]["speedup"] for r in sel]), "b": _geo([r["b"]["speedup"] for r in sel]),
            "both_a": _geo([r["a"]["speedup"] for r in both]), "both_b": _geo([r["b"]["speedup"] for r in both]),
            "b_vs_a_time": _geo([r["b_vs_a_time"] for r in sel]), "problems": len(sel),
            "ran_a": sum(r["a"]["outcome"] is not None for r in sel),
            "ran_b": sum(r["b"]["outcome"] is not None for r in sel)}
    return {"a": {"path": a.path, "label": a.label(), "device": a.device},
            "b": {"path": b.path, "label": b.label(), "device": b.device},
            "rows": rows, "geomean": geomeans}


def _side(row: Optional[dict]) -> dict:
    if row is None:
        return {"outcome": None, "speedup": None, "cause": ""}
    return {"outcome": row["result"]["outcome"], "speedup": deployed_speedup(row),
            "cause": row["result"].get("cause", "").split(":")[0]}


def _x(v: Optional[float]) -> str:
    return "not measured" if v is None else f"{v:.3f}x"


def _geo_cell(g: tuple[Optional[float], int], of: int) -> str:
    """The geomean and how many of the `of` problems it counts; 'not run' where the run has none there."""
    return f"{_x(g[0])} ({g[1]}/{of} measured)" if of else "not run"


def render(cmp: dict) -> str:
    a, b = cmp["a"], cmp["b"]
    lines = ["# Two bench runs side by side", "",
             f"- A: {a['label']} on {a['device']} — `{a['path']}`",
             f"- B: {b['label']} on {b['device']} — `{b['path']}`", ""]
    if a["device"] != b["device"]:
        lines += [f"Note: the runs were measured on different devices ({a['device']} vs {b['device']}): "
                  "B-vs-A times compare machines as well as settings.", ""]
    lines += ["Deployed speedup vs each run's own compiler baseline (unsolved = 1.0), geomean over measured "
              "speedups only; then over the problems both runs measured; and B's deployed time against A's "
              "(t_A / t_B, where both were measured).", "",
              f"| level | A {a['label']} | B {b['label']} | A, both measured | B, both measured | B vs A time |",
              "|---|---|---|---|---|---|"]
    for level, g in cmp["geomean"].items():
        both_ran = sum(1 for r in cmp["rows"] if (level == "all" or r["level"] == level)
                       and r["a"]["outcome"] is not None and r["b"]["outcome"] is not None)
        lines.append(f"| {level} | {_geo_cell(g['a'], g['ran_a'])} | {_geo_cell(g['b'], g['ran_b'])} | "
                     f"{_x(g['both_a'][0])} | {_x(g['both_b'][0])} ({g['both_b'][1]}) | "
                     f"{_geo_cell(g['b_vs_a_time'], both_ran)} |")
    lines += ["", "| problem | A outcome | A speedup | B outcome | B speedup | A ms | B ms | B vs A time |",
              "|---|---|---|---|---|---|---|---|"]
    for r in cmp["rows"]:
        cells = []
        for side in ("a", "b"):
            s = r[side]
            outcome = "not run" if s["outcome"] is None else (
                s["outcome"] + (f" ({s['cause']})" if s["outcome"] != "optimized" and s["cause"] else ""))
            cells += [outcome, "" if s["outcome"] is None else _x(s["speedup"])]
        ms = ["" if v is None else f"{v:.4f}" for v in (r["a_ms"], r["b_ms"])]
        lines.append(f"| {r['problem']} | {' | '.join(cells)} | {' | '.join(ms)} | "
                     f"{'' if r['b_vs_a_time'] is None else _x(r['b_vs_a_time'])} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run_a", help="bench.json (or its directory): the reference run, A")
    p.add_argument("run_b", help="bench.json (or its directory): the run compared with it, B")
    p.add_argument("--out", help="also write the comparison here (markdown)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON instead of markdown")
    args = p.parse_args(argv)
    cmp = compare(load_run(args.run_a), load_run(args.run_b))
    text = render(cmp)
    if args.out:
        Path(args.out).write_text(text)
    print(json.dumps(cmp, indent=1) if args.json else text, end="" if not args.json else "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
