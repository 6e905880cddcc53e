"""What the dashboard reads out of a job's stored report.json and trajectory.jsonl (pipeline/report.py's
output, as the worker stored it in the blob store).

Only the job page reads them (the overview's figures are columns of `jobs`). A stored file is read
through the blob store's verified open and only up to a size limit; anything unreadable or not
shaped as expected reads as absent, never as an error page.
"""
from __future__ import annotations

import json
import math
from typing import Any

MAX_REPORT_BYTES = 16 << 20  # the worker's own limit on report.json
MAX_TRAJECTORY_BYTES = 8 << 20
MAX_TREE_NODES = 300  # candidates drawn per kernel; the rest are counted


def read_json(blobs: Any, sha: str, size: int, limit: int = MAX_REPORT_BYTES) -> Any:
    """A stored JSON artifact, or None when it is too large, missing, corrupt or not JSON."""
    if size > limit:
        return None
    try:
        with blobs.open_verified(sha, size) as f:
            return json.loads(f.read(limit + 1))
    except Exception:  # a report we cannot read is a missing report, not a broken page
        return None


def llm_usage(report: Any) -> dict | None:
    """Token totals of the report's `llm` (one generator's usage, or a list of them); None when absent."""
    usage = report.get("llm") if isinstance(report, dict) else None
    entries = usage if isinstance(usage, list) else [usage] if isinstance(usage, dict) else []
    entries = [e for e in entries if isinstance(e, dict)]
    if not entries:
        return None
    total = prompt = completion = calls = 0
    cost: float | None = None
    for e in entries:
        p, c = _int(e.get("prompt_tokens")), _int(e.get("completion_tokens"))
        prompt, completion = prompt + p, completion + c
        total += _int(e.get("total_tokens")) or p + c
        calls += _int(e.get("calls"))
        if isinstance(e.get("cost"), (int, float)) and math.isfinite(e["cost"]):
            cost = (cost or 0.0) + float(e["cost"])
    return {"total_tokens": total, "prompt_tokens": prompt, "completion_tokens": completion, "calls": calls,
            "cost": cost}


def _int(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0 else 0


def read_trajectory(blobs: Any, sha: str, size: int) -> list[dict]:
    """trajectory.jsonl's records (one per candidate), or [] when it is too large or unreadable."""
    if size > MAX_TRAJECTORY_BYTES:
        return []
    try:
        with blobs.open_verified(sha, size) as f:
            lines = f.read(MAX_TRAJECTORY_BYTES + 1).decode("utf-8", "replace").splitlines()
    except Exception:
        return []
    out = []
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("target"), str):
            out.append(rec)
    return out
