"""What the capture stage records about one compiled graph (plain data, JSON-able)."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path

MODULE_FILE = "baseline_module.py"
CAPTURE_FILE = "capture.json"
TENSORS_FILE = "capture_tensors.pt"
WEIGHTS_FILE = "weights.safetensors"  # the job's weights, when given


def reduced_precision_reduction_mode(dtype: str) -> str:
    """The CapturedGraph.library_math key of whether cuBLAS may reduce a `dtype` (bf16, fp16) GEMM in
    that dtype (torch.backends.cuda.matmul.allow_<dtype>_reduced_precision_reduction)."""
    return f"cuda.matmul.allow_{dtype}_reduced_precision_reduction"


@dataclass
class ArgSpec:
    """One entry of the flat argument list that Inductor's `call(args)` receives."""

    kind: str  # "param" | "buffer" | "input" | "const"
    ref: str  # parameter/buffer name, input index, or constant index
    shape: list[int]
    stride: list[int]
    dtype: str


class Reproduction(str, Enum):
    """Whether re-executing Inductor's saved module gives the compiled model's output."""

    BIT_EXACT = "bit-exact"  # bit for bit (as run, or when both are seeded alike)
    # the compiled model does not reproduce itself (a non-deterministic library algorithm, atomics):
    # the module's difference lies within the compiled model's own run-to-run spread
    WITHIN_NONDETERMINISM = "within-nondeterminism"
    NO = "no"  # the module is not the compiled model: nothing could be verified against it


@dataclass
class CapturedGraph:
    """Inductor's output module for a model, and how to feed and read it."""

    module_path: str
    args: list[ArgSpec]
    output_map: list[int]  # model output leaf i is call() output output_map[i]
    out_spec: str  # pytree spec of the model output (torch.utils._pytree.treespec_dumps)
    module_constants: list[str] = field(default_factory=list)  # tensor globals of the module
    kernel_configs: dict = field(default_factory=dict)  # kernel name -> launch config chosen at compile
    torch_version: str = ""
    triton_version: str = ""
    device_name: str = ""
    compile_seconds: float = 0.0
    # Inductor's compile worker pool when the compile began (compiled.compile_pool.CompilePool; {} on the CPU)
    compile_pool: dict = field(default_factory=dict)
    # Inductor's autotune summary lines added up (compiled.autotune_log.AutotuneSummary; {} where none was read)
    autotune: dict = field(default_factory=dict)
    mode_options: dict = field(default_factory=dict)
    context_ms: dict = field(default_factory=dict)  # eager and torch.compile callable, for context
    restitch_bit_exact: bool | None = None  # re-executing the saved source reproduced the output
    restitch_max_abs_diff: float | None = None
    # the math modes the baseline's library calls ran under (library_math_modes)
    library_math: dict = field(default_factory=dict)
    # how the re-executed module reproduces the compiled model: a Reproduction value
    reproduction: str | None = None
    # max |Δ| between seeded runs of the compiled model itself (0.0: deterministic; None: not measured)
    nondeterminism_max_abs_diff: float | None = None

    @property
    def workdir(self) -> Path:
        return Path(self.module_path).parent

    @property
    def tensors_path(self) -> Path:
        return self.workdir / TENSORS_FILE

    def save(self, workdir: Path) -> Path:
        path = Path(workdir) / CAPTURE_FILE
        path.write_text(json.dumps(asdict(self), indent=1))
        return path

    @classmethod
    def load(cls, workdir: str | Path) -> "CapturedGraph":
        data = json.loads((Path(workdir) / CAPTURE_FILE).read_text())
        data["args"] = [ArgSpec(**a) for a in data["args"]]
        cg = cls(**data)
        # The directory may have moved since capture (artifacts copied, test data).
        cg.module_path = str(Path(workdir) / Path(cg.module_path).name)
        return cg
