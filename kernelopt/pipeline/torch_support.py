"""The torch releases the engine supports, and the refusal of any other before a job starts.

Capture and re-stitch read the output module Inductor generates (`call` on a
`Runner` class, the launch syntax, how kernels are declared), and that module
changes between torch releases (torch 2.6's has no `Runner` and launches with
`grid=`; 2.9 moved `call` onto `Runner`).
The engine is tested on torch 2.11 (the H200 GPU suite, triton 3.6) and 2.13 (CPU
CI). On another release a job would get as far as capture and fail there with a
message about Inductor's internals, so `kernelopt optimize`, `kernelopt bench` and
`kernelopt worker` check the installed torch first and refuse with one line. They refuse,
with the command that installs it, where triton is missing too (a CPU torch does not bring
it); `kernelopt check` refuses only where torch or triton is missing.

The version is read from the installed distribution, never by importing torch:
the worker's supervisor and a job's orchestrator do not import torch (their
children do), and the check must cost nothing.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from pathlib import Path

# (major, minor), inclusive at both ends: every patch release and pre-release of these.
# Widen it only together with a GPU run of the suite on the new release (docs/architecture.md, Supported torch).
SUPPORTED_TORCH = ((2, 11), (2, 13))

_VERSION_RE = re.compile(r"^\s*(\d+)\.(\d+)")


def supported_range_text() -> str:
    (lo_major, lo_minor), (hi_major, hi_minor) = SUPPORTED_TORCH
    return f"{lo_major}.{lo_minor}–{hi_major}.{hi_minor}"


def installed_torch_version() -> str | None:
    """The installed torch's version string (e.g. "2.11.0+cu130"), or None where torch is not installed."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        pass
    # A source build on PYTHONPATH has no distribution metadata; its torch/version.py says the version.
    spec = importlib.util.find_spec("torch")
    for root in (spec.submodule_search_locations or []) if spec else []:
        try:
            text = (Path(root) / "version.py").read_text()
        except OSError:
            continue
        found = re.search(r"""^__version__\s*(?::\s*str\s*)?=\s*['"]([^'"]+)['"]""", text, re.M)
        if found:
            return found.group(1)
    return None


def torch_version_problem(version: str | None) -> str | None:
    """Why torch `version` cannot run the engine, or None when it is in SUPPORTED_TORCH."""
    supported = f"KernelOPT supports torch {supported_range_text()}"
    if version is None:
        return f"torch is not installed; {supported}"
    match = _VERSION_RE.match(version)
    if match is None:
        return f"torch reports the version {version!r}, which is not a release number; {supported}"
    if not SUPPORTED_TORCH[0] <= (int(match.group(1)), int(match.group(2))) <= SUPPORTED_TORCH[1]:
        return (f"torch {version} is not supported: {supported} (Inductor's generated code, which capture and "
                "re-stitch read, changes between releases)")
    return None


def torch_refusal(command: str, version: str | None = None) -> str | None:
    """The one line `command` prints before refusing to start, or None when the installed torch is supported.

    `version`: the version to judge (default: the installed torch's).
    """
    problem = torch_version_problem(version if version is not None else installed_torch_version())
    return f"{command}: {problem}" if problem else None


def triton_problem() -> str | None:
    """Why the engine cannot run for want of triton (not installed), or None. Looked up, never imported.

    CUDA builds of torch install triton; the CPU builds do not, and `pip install '.[service]'` does
    not list it (it would replace the triton a CUDA torch pins, and the API needs none), so a CPU
    machine can have torch without it. The engine needs it there too: the Triton interpreter runs
    the single-kernel problems.
    """
    import sys

    try:
        found = importlib.util.find_spec("triton") is not None
    except (ImportError, ValueError):  # a broken install, or an import hook that refuses it
        found = False
    if found:
        return None
    return (f"triton is not installed (CPU builds of torch do not bring it; the engine needs it beside torch, "
            f"the Triton interpreter included): install it with `{sys.executable} -m pip install triton`")


def engine_refusal(command: str, torch_version_too: bool = True) -> str | None:
    """The one line `command` prints before refusing to start: torch missing or (`torch_version_too`)
    unsupported, or triton missing; None when the engine can run here."""
    import sys

    version = installed_torch_version()
    if version is None:
        (lo_major, lo_minor), (hi_major, hi_minor) = SUPPORTED_TORCH
        return (f"{command}: {torch_version_problem(None)}: install it with `{sys.executable} -m pip install "
                f"'torch>={lo_major}.{lo_minor},<{hi_major}.{hi_minor + 1}'` (on a GPU machine, the CUDA build "
                "its driver takes)")
    refusal = torch_refusal(command, version) if torch_version_too else None
    if refusal is None and (problem := triton_problem()) is not None:
        refusal = f"{command}: {problem}"
    return refusal


def refuse_unsupported_torch(command: str, torch_version_too: bool = True) -> bool:
    """Print `command`'s refusal line to stderr and return True when the installed torch is missing or
    unsupported (`torch_version_too`; else only missing), or triton is missing (`engine_refusal`)."""
    import sys

    refusal = engine_refusal(command, torch_version_too)
    if refusal:
        print(refusal, file=sys.stderr, flush=True)
    return refusal is not None
