"""Whether the Triton interpreter (no GPU) runs a kernel file faithfully in the job's dtype.

Measured on this project's CPU set-up (triton 3.9, torch 2.13, TRITON_INTERPRET=1):
fp32 and fp16 kernels compute correctly; in bf16, loads, stores and casts to fp32
do (a softmax that upcasts matches its reference), but arithmetic on bf16 values
(`tl.load(x) + tl.load(y)`) and `tl.dot` on bf16 tiles return garbage (1e36, NaN)
without an error. A bf16 kernel file would then fail Gate 3 against its PyTorch
reference — a verdict on the interpreter, not on the kernel — or, with another
Triton, raise at its first launch.

So before a kernel job in a dtype other than fp32 runs on the interpreter, the
submitted kernel is run against its own reference there (Gate 3's rule, that
dtype's tolerance). If it disagrees or raises in that dtype but agrees in fp32, the
interpreter cannot run it in that dtype: the job ends `no-gpu` saying so, and
`kernelopt check` says it cannot check, instead of blaming the kernel. A kernel
that fails in fp32 as well is left to the gates: that is the kernel's own fault.
Runs in a child with TRITON_INTERPRET=1 (it runs submitted code).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from kernelopt.compiled.kernel_io import clone_arg
from kernelopt.core.tolerance import Dtype
from kernelopt.load.problem import dtype_from_name, import_problem, make_inputs, output_leaves

PROBE_SEED = 0


@dataclass
class InterpreterProbe:
    problem_path: str
    dtype: str  # a core.tolerance.Dtype value


def _agrees(problem, dtype: Dtype) -> Optional[str]:
    """None when the kernel's launch matches its reference in `dtype` on this device, else what went wrong."""
    # torch, and verify.gate3_model (which imports it), here: the job orchestrator imports this
    # module and must stay torch-free
    import torch

    from kernelopt.verify.gate3_model import check_model

    xs = make_inputs(problem, PROBE_SEED, "cpu", dtype_from_name(dtype.value))
    x64 = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in xs]
    with torch.no_grad():
        try:
            ref = [t.clone() for t in output_leaves(problem.reference(*[_copy(x) for x in xs]))]
            out = output_leaves(problem.launch(*[_copy(x) for x in xs]))
        except Exception as exc:  # noqa: BLE001 - the interpreter's own errors included
            return f"its launch raised {type(exc).__name__}: {str(exc).strip()[:200]}"
        result = check_model(ref, out, lambda: output_leaves(problem.reference(*x64)), "strict", dtype=dtype)
    return None if result.passed else f"its output disagrees with its reference ({result.message[:300]})"


def _copy(x):
    return clone_arg(x)


def _helion_interpreter_error(problem) -> Optional[str]:
    """Where Helion's generated Triton uses what the interpreter does not implement (measured: its reductions
    in softmax, layer norm and attention raise `InterpreterError: 'NoneType' object has no attribute ...`
    with triton 3.9), the interpreter's own error; None when the kernel runs there (right or wrong)."""
    from triton.runtime.errors import InterpreterError

    xs = make_inputs(problem, PROBE_SEED, "cpu", dtype_from_name(Dtype.FP32.value))
    try:
        problem.launch(*xs)
    except InterpreterError as exc:
        return (f"the Triton interpreter cannot run the Triton code Helion generated for this kernel "
                f"({str(exc).strip()[:200]}); checking it needs a GPU")
    except Exception:  # noqa: BLE001 - the kernel's own failure: the gates say so
        return None
    return None


def interpreter_cannot_run(req: InterpreterProbe) -> Optional[str]:
    """Why the interpreter cannot run this kernel file in `req.dtype` (None when it can, or when the
    kernel fails in fp32 too). A stage function: call it in a child with TRITON_INTERPRET=1."""
    from pathlib import Path

    from kernelopt.load.helion_file import is_helion_source

    dtype = Dtype.parse(req.dtype)
    problem = import_problem(req.problem_path, "kernelopt_interpreter_probe")
    if is_helion_source(Path(req.problem_path).read_text()):
        why = _helion_interpreter_error(problem)
        if why:
            return why
    if dtype is Dtype.FP32:
        return None
    problem_in_dtype = _agrees(problem, dtype)
    if problem_in_dtype is None or _agrees(problem, Dtype.FP32) is not None:
        return None
    return (f"the Triton interpreter cannot run this kernel in {dtype.value}: {problem_in_dtype}, while in fp32 "
            f"it matches its reference; {dtype.value} needs a GPU")
