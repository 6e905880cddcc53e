"""What the machine offers a job, probed in a child so the caller never touches CUDA."""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import Mapping

from kernelopt.isolation import run_in_child


@dataclass
class DeviceInfo:
    cuda: bool
    name: str
    count: int
    torch_version: str
    triton_version: str
    ncu: bool


def probe(_: object = None) -> DeviceInfo:
    """What this process sees; a stage function (call it in a child)."""
    import torch
    import triton

    cuda = torch.cuda.is_available()
    return DeviceInfo(
        cuda=cuda,
        name=torch.cuda.get_device_name() if cuda else "cpu",
        count=torch.cuda.device_count() if cuda else 0,
        torch_version=str(torch.__version__),
        triton_version=str(triton.__version__),
        ncu=shutil.which("ncu") is not None,
    )


def probe_device(timeout_s: float = 120.0) -> DeviceInfo:
    return run_in_child(probe, None, timeout_s=timeout_s)


NO_GPU_MESSAGE = (
    "model mode needs a CUDA GPU (Inductor generates Triton code only for GPUs), and none is "
    "visible here. Without a GPU, KernelOPT runs single-kernel problems (a Triton `launch`, a "
    "PyTorch `reference` and `get_inputs`) on the Triton interpreter: correctness is verified, "
    "speed cannot be measured."
)


def share_compile_threads(slots: list[dict[str, str]], cpus: int | None = None,
                          environ: Mapping[str, str] | None = None) -> list[dict[str, str]]:
    """Each slot's share of the host's cores for Inductor's compile workers (TORCHINDUCTOR_COMPILE_THREADS).

    Inductor starts one compile worker per core (at most 32) in every process that compiles: with one
    job per GPU (service workers, `kernelopt bench`), eight jobs compiling at once would each start a
    worker per core of the whole host. A value set by the operator is kept; a single slot keeps
    Inductor's own choice."""
    if len(slots) <= 1 or "TORCHINDUCTOR_COMPILE_THREADS" in (os.environ if environ is None else environ):
        return slots
    cpus = cpus or len(os.sched_getaffinity(0))
    share = str(max(1, cpus // len(slots)))
    return [{**slot, "TORCHINDUCTOR_COMPILE_THREADS": share} for slot in slots]
