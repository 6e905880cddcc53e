"""Launching a kernel the way Inductor's module does, and describing its failures."""
from __future__ import annotations

import re
import traceback
from typing import Any, Optional

import torch

from kernelopt.compiled.runtime import load_kernel_module

_MAX_MESSAGE = 3000  # feedback goes into an LLM prompt: keep the useful head of it


def cuda_device(args: list[Any]) -> Optional[torch.device]:
    """The CUDA device of the first CUDA tensor argument, if any (None: CPU / interpreter)."""
    for a in args:
        if isinstance(a, torch.Tensor) and a.is_cuda:
            return a.device
    return None


def launch(launcher: Any, args: list[Any], launch_kwargs: Optional[dict] = None) -> None:
    """`launcher.run(*args, stream=...)` and wait for it.

    Inductor's launchers take the raw CUDA stream as a required keyword;
    candidates take `stream=None`. Synchronising makes asynchronous CUDA errors
    (illegal address) surface here, attributed to this launch.
    """
    device = cuda_device(args)
    stream = torch.cuda.current_stream(device).cuda_stream if device is not None else None
    launcher.run(*args, **(launch_kwargs or {}), stream=stream)
    if device is not None:
        torch.cuda.synchronize(device)


def describe_exception(exc: BaseException, candidate_file: Optional[str] = None) -> str:
    """`Type: message`, plus the candidate's own source lines on the traceback."""
    if isinstance(exc, SyntaxError) and exc.lineno:
        text = f"SyntaxError: {exc.msg} at candidate line {exc.lineno}: {(exc.text or '').strip()}"
    else:
        text = f"{type(exc).__name__}: {exc}"
    text = re.sub(r"\S*kernelopt_kernel_\w+\.py", "<candidate>", text)
    if candidate_file:
        text = text.replace(candidate_file, "<candidate>")
        # The interpreter re-raises kernel errors: the kernel's own line is on a chained exception.
        frames: list[traceback.FrameSummary] = []
        seen: set[int] = set()
        link: Optional[BaseException] = exc
        while link is not None and id(link) not in seen:
            seen.add(id(link))
            frames += [f for f in traceback.extract_tb(link.__traceback__) if f.filename == candidate_file
                       and (f.lineno, f.name) not in {(g.lineno, g.name) for g in frames}]
            link = link.__cause__ or link.__context__
        for f in frames[-3:]:
            text += f"\n  at candidate line {f.lineno}, in {f.name}: {f.line}"
    if len(text) > _MAX_MESSAGE:
        text = text[:_MAX_MESSAGE] + " ... (truncated)"
    return text


def load_candidate(source: str, name: str = "candidate"):
    """Import a candidate's source (compiled.runtime.load_kernel_module)."""
    return load_kernel_module(source, name)


def load_ios(io_or_path: Any) -> list:
    """KernelIO records from an object, a list of them, or a file written with torch.save."""
    import os

    if isinstance(io_or_path, (str, os.PathLike)):
        # Our own file (KernelIO dataclasses), not a user upload: full unpickling is fine.
        io_or_path = torch.load(io_or_path, weights_only=False)
    return list(io_or_path) if isinstance(io_or_path, (list, tuple)) else [io_or_path]
