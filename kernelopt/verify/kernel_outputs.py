"""Gate 3's raw material for a kernel file, each side in a process of its own (stage functions for children).

The kernel-file counterpart of verify/model_outputs.py: `kernel_outputs` runs either the file's PyTorch
`reference` (fp32 "r32", and float64 "r64" for the fallback test) or a candidate file's `launch` ("o32") on
each seed's inputs, writes the output leaves to files in its scratch directory and answers a manifest of
their digests. The verdict is verify/gate3_judge.py's, in a process that imports neither file.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from kernelopt.verify.model_outputs import OutputFile, OutputRole, OutputsManifest, _write, file_key, float64_failure


@dataclass
class KernelOutputsRequest:
    problem_path: str
    out_dir: str
    seeds: list[int]
    dtype: str = "fp32"
    device: str = "cuda"
    candidate_source: str | None = None  # None: the reference's outputs; else this candidate file's `launch`


def import_source(source: str, tag: str):
    """A kernel file's source imported as a module (written once to the kernel cache, named by its digest)."""
    from kernelopt.compiled.runtime import kernel_cache_dir
    from kernelopt.load.problem import import_problem

    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    path = Path(kernel_cache_dir()) / f"kernel_file_{tag}_{digest}.py"
    if not path.exists():
        path.write_text(source)
    return import_problem(path, module_name=f"kernelopt_kfile_{tag}_{digest}")


def kernel_outputs(req: KernelOutputsRequest) -> OutputsManifest:
    import torch

    from kernelopt.compiled.kernel_io import clone_arg
    from kernelopt.load.problem import dtype_from_name, import_problem, make_inputs, output_leaves
    from kernelopt.verify.float64_cast import default_dtype, float64_inputs

    original = import_problem(req.problem_path, module_name="kernelopt_kfile_original")
    cand = import_source(req.candidate_source, "final") if req.candidate_source is not None else None
    out_dir = Path(req.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    role = OutputRole.CANDIDATE if cand is not None else OutputRole.REFERENCE
    manifest = OutputsManifest(role.value)
    r64_files: dict[str, OutputFile] = {}
    for seed in req.seeds:
        xs = make_inputs(original, seed, req.device, dtype_from_name(req.dtype))
        with torch.no_grad():
            if cand is not None:
                o32 = output_leaves(cand.launch(*[clone_arg(x) for x in xs]))
                manifest.files[file_key("o32", seed)] = _write(out_dir, file_key("o32", seed), o32)
                continue
            r32 = output_leaves(original.reference(*[clone_arg(x) for x in xs]))
            manifest.files[file_key("r32", seed)] = _write(out_dir, file_key("r32", seed), r32)
            if manifest.float64_unavailable is None:
                try:  # as a model's (verify/model_outputs.py): a failure is the harness's, said in the manifest
                    with default_dtype(torch.float64):
                        r64 = output_leaves(original.reference(*float64_inputs(xs)))
                    r64_files[file_key("r64", seed)] = _write(out_dir, file_key("r64", seed), r64)
                except Exception as exc:
                    manifest.float64_unavailable = float64_failure(exc)
    if manifest.float64_unavailable is None:  # every seed's r64, or none
        manifest.files.update(r64_files)
    return manifest
