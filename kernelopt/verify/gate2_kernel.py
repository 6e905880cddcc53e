"""Gate 2, multi-seed correctness of a sub-kernel candidate (docs/architecture.md, Gate 2).

For each recorded launch (one KernelIO per seed: the kernel's real inputs, and
what Inductor's kernel produced from them) the candidate runs on guarded copies
of the arguments (verify.guarded), its pure outputs poisoned first. Then:
  - no element outside any argument was written (guard bands intact);
  - every argument the reference did not write is bit-identical to before;
  - every written argument is allclose(rtol, atol) to the reference, NaN where
    the reference has NaN; integers and bools exactly. The tolerance is the job
    dtype's (core.tolerance.gate2_tolerance; fp32's by default).
  - where the reference can run in float64 (a library group with no Triton kernel:
    its statements are vendor-library calls, which take any float dtype), an output
    that fails allclose gets Gate 3's float64 branch: the reference re-run on float64
    copies of the inputs gives r64, and the candidate passes iff
    max|cand - r64| <= rho_max * max|ref - r64| (a GEMM with K = 524288 has outputs
    near 700 whose fp32 rounding alone exceeds atol 1e-3 on elements near zero: any
    other summation order, cuBLAS's own included, failed allclose there on the H200).
Poisoning is what catches a candidate that writes nothing, drops a tail, or
returns results cached from another call: an element it does not write still
holds the poison NaN. In/out arguments (`in_out_ptr*`) are inputs too, so
they keep their recorded values. Output shapes and strides are those of the
recording by construction: the candidate writes into views laid out like them.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Optional, Sequence, Union

import torch

from kernelopt.compiled.kernel_io import KernelIO, clone_arg, unchanged
from kernelopt.core.compare import bits, compare_close, compare_exact, is_poison, max_abs_error
from kernelopt.core.tolerance import Dtype, gate2_tolerance
from kernelopt.isolation.child import ChildError, run_in_child
from kernelopt.verify.gate3_model import fallback_dists
from kernelopt.verify.guarded import GuardedLaunch
from kernelopt.verify.launch import cuda_device, describe_exception, launch, load_candidate, load_ios
from kernelopt.verify.result import GateName, GateResult

GATE: GateName = "gate2"
# The defaults below are fp32's; a job in another dtype passes that dtype's tolerance.
RTOL, ATOL = gate2_tolerance(Dtype.FP32).rtol, gate2_tolerance(Dtype.FP32).atol


def _label(i: int, arg_names: Optional[Sequence[str]]) -> str:
    return f"arg {i} ({arg_names[i]})" if arg_names and i < len(arg_names) else f"arg {i}"


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.equal(bits(a), bits(b.to(a.device)))


def classify_args(io: KernelIO, arg_names: Optional[Sequence[str]] = None,
                  reference: Any = None) -> tuple[set[int], set[int]]:
    """(written, poisoned): the arguments that are outputs, and those to poison before a run.

    With Inductor's argument names, `out_ptr*` are outputs (poisoned) and
    `in_out_ptr*` are outputs that are also read (kept). Without names, an
    argument the reference wrote is poisoned only if the reference, run on a
    poisoned copy, still reproduces the recorded result (so it never reads it);
    without a reference, written arguments keep their recorded values (a
    candidate that leaves one unchanged still fails: the reference changed it).
    An argument recorded holding nothing but the poison is a pure output either way.
    """
    tensors = {i for i, a in enumerate(io.before) if isinstance(a, torch.Tensor)}
    written = set(io.written())
    if arg_names:
        named = {i for i in tensors if i < len(arg_names) and "out_ptr" in arg_names[i]}
        written |= named
        return written, {i for i in named if "in_out_ptr" not in arg_names[i]}
    # Recorded already poisoned (compiled.kernel_io's recorder does this for out_ptr*): a pure output.
    poisoned = {i for i in written if io.before[i].numel() and bool(_all_poison(io.before[i]))}
    if reference is None or written <= poisoned:
        return written, poisoned
    trial = GuardedLaunch(io.before, written)
    launch(reference, trial.args, io.launch_kwargs)
    return written, poisoned | {i for i in written if _same_bits(trial.args[i], io.after[i])}


def _all_poison(t: torch.Tensor) -> bool:
    if t.is_floating_point():
        return bool(t.isnan().all())
    return t.dtype != torch.bool and bool(is_poison(t).all())


def _float64_outputs(reference64: Any, io: KernelIO, written: Sequence[int]) -> dict[int, torch.Tensor]:
    """The reference's outputs computed in float64 from the recorded inputs."""
    args = [a.detach().to(torch.float64) if isinstance(a, torch.Tensor) and a.is_floating_point() else clone_arg(a)
            for a in io.before]
    launch(reference64, args, io.launch_kwargs)
    return {i: args[i] for i in written}


def _rho_verdict(actual: torch.Tensor, expected: torch.Tensor, r64: torch.Tensor, rho_max: float,
                 label: str) -> tuple[Optional[str], Optional[float]]:
    """Gate 3's float64 test on one output: (None, rho) when the candidate is no farther from float64 than
    rho_max times the reference, else (why, rho)."""
    d_ref, d_opt = fallback_dists(expected, actual, r64)  # Gate 3's distances, its inf/NaN rules included
    if d_ref <= 0.0:  # the reference is exact here: allclose's verdict stands
        return f"{label}: the float64 branch does not apply (the reference equals float64)", None
    rho = d_opt / d_ref
    if rho <= rho_max:
        return None, rho
    return (f"{label}: float64 branch: max error vs float64 {d_opt:.3g} is {rho:.3g}x the reference's own "
            f"{d_ref:.3g} (rho_max {rho_max:g})"), rho


def check_launch(candidate: Any, io: KernelIO, reference: Any = None, rtol: float = RTOL,
                 atol: float = ATOL, arg_names: Optional[Sequence[str]] = None,
                 reference64: Any = None, rho_max: float = 10.0) -> tuple[Optional[str], dict]:
    """One seed: (None, metrics) if the candidate reproduces the reference, else (feedback, metrics).

    `reference64`: the reference again, where it can run on float64 inputs (module docstring): an
    output failing allclose then passes by the float64 branch instead."""
    labels = [_label(i, arg_names) for i in range(len(io.before))]
    written, poisoned = classify_args(io, arg_names, reference)
    metrics: dict = {"outputs": sorted(written), "poisoned": sorted(poisoned)}
    if not written:
        return ("the recorded launch changed none of its arguments, so there is nothing to compare "
                "against (record the reference on poisoned outputs, or pass arg_names)"), metrics
    if reference is not None:
        # The reference runs on the very same poisoned setup: an element it leaves
        # unwritten then holds the poison on both sides.
        ref = GuardedLaunch(io.before, poisoned)
        launch(reference, ref.args, io.launch_kwargs)
        expected = {i: ref.args[i] for i in written}
        del ref  # its copies of the inputs: the candidate's are made next
    else:
        expected = {i: io.after[i] for i in written}
    cand = GuardedLaunch(io.before, poisoned)
    try:
        launch(candidate, cand.args, io.launch_kwargs)
    except (Exception, SystemExit) as exc:
        return "the launch failed: " + describe_exception(exc, getattr(candidate, "__file__", None)), metrics
    msg = cand.violations(labels)
    for i, before in enumerate(io.before):
        if msg is None and isinstance(before, torch.Tensor) and i not in written:
            msg = compare_exact(cand.args[i], before,
                                f"input {labels[i]} was modified (a kernel must not write its inputs)")
    r64: Optional[dict[int, torch.Tensor]] = None
    for i in sorted(written):
        close = None if msg else compare_close(cand.args[i], expected[i], rtol, atol, f"output {labels[i]}")
        if close and reference64 is not None and cand.args[i].is_floating_point():
            if r64 is None:
                try:
                    r64 = _float64_outputs(reference64, io, sorted(written))
                except Exception as exc:  # the branch is unavailable; allclose's verdict stands
                    r64 = {}
                    metrics["gate2_float64_unavailable"] = describe_exception(exc)
            if i in r64:
                verdict, rho = _rho_verdict(cand.args[i], expected[i], r64[i], rho_max, f"output {labels[i]}")
                if rho is not None:
                    metrics[f"gate2_rho_arg{i}"] = rho
                close = None if verdict is None else f"{close}; {verdict}"
        msg = msg or close
        metrics[f"max_abs_err_arg{i}"] = max_abs_error(cand.args[i], expected[i])
    return msg, metrics


def check_kernel(candidate_source: str, ios: list[KernelIO], reference: Any = None,
                 rtol: float = RTOL, atol: float = ATOL, arg_names: Optional[Sequence[str]] = None,
                 name: str = "candidate", loader: Optional[Callable[[str, str], Any]] = None,
                 reference64: Any = None, rho_max: float = 10.0) -> GateResult:
    """All seeds must pass; the first failing seed and its reason are reported.

    `loader(source, name)`: how to load the candidate (default `load_candidate`;
    library groups bind theirs to the output module).
    `ios` may be a list or a compiled.kernel_io.RecordedOnDemand (one seed held at a time).

    `reference`: optionally the original kernel (an object with .run); it is
    then re-run on the same poisoned setup, else `io.after` is the reference
    (record it on poisoned outputs so unwritten elements compare equal).
    `reference64`, `rho_max`: the float64 branch (check_launch).
    """
    if not ios:
        return GateResult.fail(GATE, "no recorded launches to verify against", seeds=0)
    try:
        mod = (loader or load_candidate)(candidate_source, name)
    except (Exception, SystemExit) as exc:
        return GateResult.fail(GATE, "the candidate does not import: " + describe_exception(exc))
    worst: dict[str, float] = {}
    for seed in range(len(ios)):
        try:
            msg, metrics = check_launch(mod, ios[seed], reference, rtol, atol, arg_names, reference64, rho_max)
        except (Exception, SystemExit) as exc:  # the reference itself failed: not the candidate's fault
            return GateResult.fail(GATE, f"could not run the reference: {describe_exception(exc)}; seed {seed}",
                                   failed_seed=seed, harness_error=True)
        for key, value in metrics.items():
            if key.startswith(("max_abs_err", "gate2_rho")):
                worst[key] = max(worst.get(key, 0.0), value)
        if msg:
            hint = (" (the earlier seeds passed: does the candidate depend on data or state from an "
                    "earlier call?)") if seed > 0 else ""
            return GateResult.fail(GATE, f"{msg}; seed {seed}{hint}", failed_seed=seed, seeds=len(ios),
                                   rtol=rtol, atol=atol, **worst)
    extra = {}
    resolved = getattr(mod, "kernelopt_resolved_method", None)
    if callable(resolved):  # a candidate choosing its construction at run time says which one ran
        extra["resolved_method"] = resolved()
    return GateResult.ok(GATE, f"matches the reference on {len(ios)} seeds (rtol {rtol:g}, atol {atol:g})",
                         seeds=len(ios), rtol=rtol, atol=atol, **worst, **extra)


def _kernel_child(payload: tuple) -> GateResult:
    source, ios, rtol, atol, arg_names, name = payload
    return check_kernel(source, load_ios(ios), None, rtol, atol, arg_names, name)


def check_kernel_in_child(candidate_source: str, ios_or_path: Union[str, os.PathLike, list[KernelIO]],
                          timeout_s: float = 600.0, env: Optional[dict[str, str]] = None,
                          rtol: float = RTOL, atol: float = ATOL,
                          arg_names: Optional[Sequence[str]] = None, name: str = "candidate") -> GateResult:
    """check_kernel in a fresh process (against the recorded io.after); crash/timeout → failed result."""
    try:
        return run_in_child(_kernel_child, (candidate_source, ios_or_path, rtol, atol,
                                            list(arg_names) if arg_names else None, name),
                            timeout_s=timeout_s, env=env,
                            read_only=[os.fspath(ios_or_path)] if isinstance(ios_or_path, (str, os.PathLike)) else [])
    except ChildError as err:
        what = {"crash": "the candidate crashed the process (illegal memory access?)",
                "timeout": f"the candidate did not finish within {timeout_s:g} s"}.get(err.kind, "gate 2 failed")
        return GateResult.fail(GATE, f"{what}: {err.message}", stage=err.kind)


def reference_io(launcher: Any, before: list[Any], kernel: str = "",
                 arg_names: Optional[Sequence[str]] = None, launch_kwargs: Optional[dict] = None) -> KernelIO:
    """Record a launch the way Gate 2 wants it: pure outputs (`out_ptr*`) poisoned first.

    An element the kernel leaves unwritten then holds the poison in `after`,
    and a candidate that leaves it unwritten too compares equal.
    """
    poisoned = {i for i, a in enumerate(before) if isinstance(a, torch.Tensor) and arg_names
                and i < len(arg_names) and "out_ptr" in arg_names[i] and "in_out_ptr" not in arg_names[i]}
    run = GuardedLaunch(before, poisoned)
    launch(launcher, run.args, launch_kwargs)
    clean = [clone_arg(a) for a in before]
    # Inputs the launch left alone are held once; a pure output always gets its own copy, even
    # where the buffer's earlier bytes happen to equal the result (uninitialised memory reused).
    after = [c if i not in poisoned and unchanged(a, c) else clone_arg(a)
             for i, (a, c) in enumerate(zip(run.args, clean, strict=True))]
    return KernelIO(kernel, clean, after, dict(launch_kwargs or {}))


# --- single-kernel mode: whole outputs of a launcher vs a reference function -------------

def _leaves(x: Any) -> list[Any]:
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in _leaves(item)]
    if isinstance(x, dict):
        return [leaf for key in sorted(x) for leaf in _leaves(x[key])]
    return [x]


def check_kernel_outputs(candidate: Callable[..., Any], reference: Callable[..., Any],
                         make_inputs: Callable[[int], list], seeds: Sequence[int] = (1, 2, 3),
                         rtol: float = RTOL, atol: float = ATOL) -> GateResult:
    """Compare `candidate(*inputs)` with `reference(*inputs)` for each seed.

    `make_inputs(seed)` builds fresh inputs; each side gets its own copy. The
    inputs after the call must match too: a candidate may modify an input only
    where the reference does (in-place semantics), and must otherwise leave it.
    """
    for seed in seeds:
        inputs = list(make_inputs(seed))
        ref_in, cand_in = [clone_arg(x) for x in inputs], [clone_arg(x) for x in inputs]
        try:
            expected = _leaves(reference(*ref_in))
        except Exception as exc:
            return GateResult.fail(GATE, f"the reference raised: {describe_exception(exc)}; seed {seed}",
                                   failed_seed=seed, harness_error=True)
        try:
            actual = _leaves(candidate(*cand_in))
            device = cuda_device(cand_in + actual)
            torch.cuda.synchronize(device) if device is not None else None
        except (Exception, SystemExit) as exc:
            return GateResult.fail(GATE, f"the launch failed: {describe_exception(exc)}; seed {seed}",
                                   failed_seed=seed)
        if len(actual) != len(expected):
            return GateResult.fail(GATE, f"returned {len(actual)} outputs, the reference {len(expected)}; "
                                   f"seed {seed}", failed_seed=seed)
        msg = None
        for i, (c, r) in enumerate(zip(cand_in, ref_in, strict=True)):
            if msg is None and isinstance(c, torch.Tensor):
                what = "modified" if not _same_bits(r, inputs[i]) else "left unchanged"
                msg = compare_close(c, r, rtol, atol, f"input {i} after the call (the reference {what} it)")
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            if msg is None and isinstance(e, torch.Tensor):
                msg = (compare_close(a, e, rtol, atol, f"output {i}") if isinstance(a, torch.Tensor)
                       else f"output {i}: got {type(a).__name__}, expected a tensor")
            elif msg is None and a != e:
                msg = f"output {i}: got {a!r}, expected {e!r}"
        if msg:
            return GateResult.fail(GATE, f"{msg}; seed {seed}", failed_seed=seed, seeds=len(seeds))
    return GateResult.ok(GATE, f"matches the reference on {len(seeds)} seeds (rtol {rtol:g}, atol {atol:g})",
                         seeds=len(seeds), rtol=rtol, atol=atol)
