"""The job page's figures from the job's stored report.json and trajectory.jsonl (pipeline/report.py,
pipeline/job.py, pipeline/model_job.py write them): per-kernel share of GPU time with roofline and
Nsight Compute figures, the search tree, the precision statement, the speedup vs eager.

Everything is read defensively: a kernel-file job has no profile, a job that stopped early has no
search, and an older report may lack a field — each section then says what is missing.
"""
from __future__ import annotations

import math
from typing import Any

from kernelopt.core.text import clip


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _list(v: Any) -> list:
    return v if isinstance(v, list) else []


def _dict(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


def kernel_rows(report: dict) -> list[dict]:
    """The baseline profile's kernels, largest share first, joined with the strategy's decision and ncu."""
    decisions = {d.get("name"): d for d in _list(report.get("targets")) if isinstance(d, dict)}
    ncu = _dict(_dict(report.get("ncu")).get("kernels"))
    rows = []
    for k in _list(_dict(report.get("profile")).get("kernels")):
        if not isinstance(k, dict) or not isinstance(k.get("name"), str):
            continue
        d, n = _dict(decisions.get(k["name"])), _dict(ncu.get(k["name"]))
        rows.append({"name": k["name"], "kind": k.get("kind") or "", "ms": _num(k.get("device_ms")),
                     "share": _num(k.get("share")) or 0.0, "registers": k.get("registers"),
                     "spills": k.get("spills"), "gbps": _num(k.get("achieved_gbps")),
                     "roofline": _num(k.get("roofline_fraction")),
                     "searched": d.get("searched"), "reason": d.get("reason") or "", "tier": d.get("tier") or "",
                     "ceiling": _num(d.get("roofline_ceiling")),
                     "ncu": {"tier": n.get("tier") or "", "compute": _num(n.get("compute_sol_pct")),
                             "memory": _num(n.get("memory_sol_pct")), "occupancy": _num(n.get("achieved_occupancy_pct")),
                             "ms": _num(n.get("duration_ms")),
                             "rule": (_dict((_list(n.get("rules")) or [{}])[0]).get("name") or "")} if n else None})
    return sorted(rows, key=lambda r: -r["share"])


def profile_summary(report: dict) -> dict | None:
    p = _dict(report.get("profile"))
    if not p:
        return None
    return {"e2e_ms": _num(p.get("end_to_end_ms")), "gpu_ms": _num(p.get("gpu_total_ms")),
            "library": _num(p.get("library_share")), "triton": _num(p.get("triton_share")),
            "bandwidth": _num(p.get("bandwidth_gbps")), "method": p.get("timing_method") or "",
            "ncu_note": _dict(report.get("ncu")).get("note") or ""}


def search_trees(report: dict, trajectory: list[dict], max_nodes: int) -> list[dict]:
    """Per searched kernel: the candidates as a tree (parent → derived candidates) under Inductor's kernel,
    each with the gate that stopped it, or its kernel time and whether it went on to be deployed."""
    chosen = _dict(_dict(report.get("waterfall_steps")).get("combination"))
    summaries = {s["target"]: s for s in _list(report.get("search"))
                 if isinstance(s, dict) and isinstance(s.get("target"), str)}
    by_target: dict[str, list[dict]] = {}
    for rec in trajectory:
        by_target.setdefault(rec["target"], []).append(rec)
    trees = []
    for target in list(summaries) + [t for t in by_target if t not in summaries]:
        recs = by_target.get(target, [])
        s = _dict(summaries.get(target))
        need = _num(s.get("required_kernel_speedup"))
        base_ms = next((_num(r.get("baseline_kernel_ms")) for r in recs if _num(r.get("baseline_kernel_ms"))), None)
        nodes: dict[str, dict] = {}
        for r in recs[:max_nodes]:
            cid = str(r.get("candidate_id") or "")
            if not cid or cid in nodes:
                continue
            nodes[cid] = _node(r, need, chosen.get(target) == cid)
        roots: list[dict] = []
        for node in nodes.values():
            parent = nodes.get(str(node["parent"])) if node["parent"] else None
            (parent["children"] if parent is not None and parent is not node else roots).append(node)
        trees.append({"target": target, "baseline_ms": base_ms, "roots": roots, "shown": len(nodes),
                      "attempts": s.get("attempts", len(recs)), "passed": s.get("passed"),
                      "best": _num(s.get("best_kernel_speedup")), "need": need,
                      "stopped": s.get("stopped_reason") or "", "accepted": chosen.get(target)})
    return trees


def _node(r: dict, need: float | None, deployed: bool) -> dict:
    ms, base = _num(r.get("kernel_ms")), _num(r.get("baseline_kernel_ms"))
    speedup = base / ms if ms and base else None
    if deployed:
        verdict, cls = "deployed: passed Gates 1–4", "deployed"
    elif not r.get("passed"):
        verdict, cls = f"stopped at {r.get('gate') or 'a gate'}", "rejected"
    elif need is not None and (speedup is None or speedup < need):
        verdict, cls = f"passed Gates 1–2; too slow (needs ≥ {need:.3f}× at kernel level)", "slow"
    else:
        verdict, cls = "passed Gates 1–2; sent to Gates 3–4, not deployed", "passed"
    return {"id": str(r.get("candidate_id")), "parent": r.get("parent"), "generator": r.get("generator") or "",
            "plan": clip(str(r.get("plan") or ""), 160), "ms": ms, "speedup": speedup, "verdict": verdict, "cls": cls,
            "feedback": "" if r.get("passed") else clip(str(r.get("feedback") or ""), 300), "children": []}


def precision_statement(job: Any, report: dict) -> dict:
    """Policy, and whether the deployed code computes in reduced precision or in a declared fp32 emulation."""
    result = _dict(report.get("result"))
    policy = result.get("precision") or job.precision or "strict"
    emulation = [e for e in _list(report.get("emulation")) if isinstance(e, dict)]
    emulated = [e for e in emulation if e.get("precision") == "fp32-emulated"]
    reduced_gemms = [e for e in emulation if e.get("precision") != "fp32-emulated"]
    reduced = result.get("reduced_precision", job.reduced_precision)
    if not report:
        deployed = "unknown: the job has no report.json" if job.reduced_precision is None else (
            "reduced precision" if job.reduced_precision else "full fp32 precision")
    elif emulated:  # a declared construction whose error Gate 3 measured against float64
        deployed = "fp32 emulated on tensor cores (a declared emulation, its error measured by Gate 3)"
    elif reduced:
        deployed = "reduced precision (allowed by the policy)"
    else:
        deployed = "full fp32 precision"
    return {"policy": policy, "deployed": deployed, "reduced": bool(reduced),
            "markers": [str(m) for m in _list(report.get("deployed_reduced_precision"))][:10],
            "baseline_markers": [str(m) for m in _list(report.get("baseline_reduced_precision"))][:10],
            "emulation": [{"target": e.get("target"), "method": e.get("resolved_method") or e.get("method"),
                           "precision": e.get("precision"), "construction": e.get("construction"),
                           "rho": _num(e.get("rho"))} for e in emulated + reduced_gemms]}


def vs_eager(job: Any, report: dict) -> dict | None:
    """The deployed model's time against eager PyTorch's, both measured on the GPU (capture's context
    timing for eager, the job's deployed time); None when either was not measured."""
    ctx = _dict(report.get("context_timings"))
    eager, compiled = _num(ctx.get("eager")), _num(ctx.get("torch.compile"))
    if job.timing == "not-measured" or not eager or not job.optimized_ms:
        return None
    return {"eager_ms": eager, "compile_ms": compiled, "speedup": eager / job.optimized_ms}
