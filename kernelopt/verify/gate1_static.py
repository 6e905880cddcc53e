"""Gate 1, static: the candidate imports, compiles and completes one dry-run launch.

`check_static` runs inside a child process (isolation.run_in_child): a crash or
an illegal memory access ends only that child, and `check_static_in_child`
turns it into a failed GateResult instead of an exception.
"""
from __future__ import annotations

import os
from typing import Any, Optional, Union

from kernelopt.compiled.kernel_io import KernelIO, clone_arg
from kernelopt.isolation.child import ChildError, run_in_child
from kernelopt.verify.launch import describe_exception, launch, load_candidate, load_ios
from kernelopt.verify.result import GateName, GateResult

GATE: GateName = "gate1"


def check_static(candidate_source: str, io: KernelIO, name: str = "candidate", loader=None) -> GateResult:
    """Import the candidate and launch it once on copies of `io.before`.

    `loader(source, name)`: how to load it (default `load_candidate`; a library-group
    candidate is bound to its output module, `compiled.runtime.bind_candidate`).
    """
    try:
        mod = (loader or load_candidate)(candidate_source, name)
    except (Exception, SystemExit) as exc:
        return GateResult.fail(GATE, "the candidate does not import: " + describe_exception(exc),
                               stage="import")
    args = [clone_arg(a) for a in io.before]  # the recorded tensors stay pristine for Gate 2
    try:
        launch(mod, args, io.launch_kwargs)
    except (Exception, SystemExit) as exc:
        # Triton compiles at the first launch: compile errors land here too.
        return GateResult.fail(GATE, "the dry-run launch failed: " + describe_exception(exc, getattr(mod, "__file__", None)),
                               stage="launch")
    return GateResult.ok(GATE, "compiled and completed one launch", stage="done")


def _static_child(payload: tuple[str, Any, str]) -> GateResult:
    source, io_or_path, name = payload
    return check_static(source, load_ios(io_or_path)[0], name)


def _paths(io_or_path: Any) -> list[str]:
    """The recorded-inputs file the sandboxed child must read, if it was given as a path."""
    return [os.fspath(io_or_path)] if isinstance(io_or_path, (str, os.PathLike)) else []


def check_static_in_child(candidate_source: str, io_path_or_io: Union[str, os.PathLike, KernelIO],
                          timeout_s: float = 300.0, env: Optional[dict[str, str]] = None,
                          name: str = "candidate") -> GateResult:
    """check_static in a fresh process; a crash or timeout becomes a failed result.

    `io_path_or_io`: a KernelIO (pickled to the child: CPU tensors only, since
    the parent never touches CUDA) or a file written with torch.save (a
    KernelIO or a list of them; the first is used).
    """
    try:
        return run_in_child(_static_child, (candidate_source, io_path_or_io, name),
                            timeout_s=timeout_s, env=env, read_only=_paths(io_path_or_io))
    except ChildError as err:
        if err.kind in ("crash", "protocol"):
            msg = f"the candidate crashed the process (illegal memory access?): {err.message}"
        elif err.kind == "timeout":
            msg = (f"the candidate did not finish within {timeout_s:g} s "
                   "(an endless loop, or a grid far larger than intended?)")
        else:
            msg = f"gate 1 could not run the candidate: {err.message}"
        return GateResult.fail(GATE, msg, stage=err.kind)
