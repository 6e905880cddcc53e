"""Gate 1's reading of a candidate's source, before anything of it runs (docs/architecture.md, Gate 1).

Kept apart from gate1_static (which imports and launches) so the search's orchestrator can
refuse a candidate without importing the launch machinery.
"""
from __future__ import annotations

import ast
from typing import Optional

from kernelopt.compiled.module_parse import dotted

# CUDA stream APIs a candidate may not call: Gate 4 times the stream a candidate is launched
# on, so work moved to a stream of its own would escape the timing (and race its consumers).
# Inductor's own kernels take the current stream (`get_raw_stream`), which stays allowed.
_STREAM_CALLS = {"Stream", "stream"}  # as torch.cuda.X / torch.X / an imported bare name
_STREAM_METHODS = {"ExternalStream", "set_stream", "wait_stream", "StreamContext"}  # by any path


def static_refusal(candidate_source: str) -> Optional[str]:
    """Why the candidate is refused before it runs, or None.

    A candidate that creates or switches CUDA streams is refused (it could hide its work from
    Gate 4's timing). Source that does not parse is left to the import, which says where.
    """
    try:
        tree = ast.parse(candidate_source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = dotted(node.func, tail=True) or ""
            last = name.rsplit(".", 1)[-1]
            if last in _STREAM_METHODS or (last in _STREAM_CALLS and (
                    "cuda" in name.split(".") or name.startswith("torch.") or last == name)):
                return (f"line {node.lineno}: `{name.lstrip('.') or last}(...)` creates or switches a CUDA stream; a candidate must "
                        "launch on the stream it is called on (Gate 4 times that stream)")
    return None
