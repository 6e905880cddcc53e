"""Level 3's full networks at KernelBench sizes (issue 37, item 5): ResNet-18/50, VGG-16, MobileNet v1/v2,
EfficientNet-B0, a DenseNet-121 dense block, a minGPT block, a Swin block, a multi-layer LSTM.

Each file is loaded as the engine loads it (kernelopt.load.problem: the kind check, which parses the source under
its size limit, the import, `Model(*get_init_inputs())` under the model seed, `get_inputs()` under the input
seed) and run forward once on the CPU at batch 1 (the file's `batch_size` patched after import): the full sizes
are GPU work. test_suite_problems runs them at full size on the meta device, and in bf16/fp16.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
import torch

from kernelopt.load.problem import MAX_SOURCE_BYTES, build_model, import_problem, make_inputs, problem_kind
from kernelopt.verify.float64_cast import cast_float64, default_dtype, float64_inputs

LEVEL3 = Path(__file__).parent.parent / "benchmarks" / "problems" / "level3"

#: file -> (output shape at batch 1, parameter count); the counts of the torchvision classes where there is one
#: (resnet18, resnet50, vgg16, mobilenet_v2, efficientnet_b0), which these files match weight for weight
NETWORKS = {
    "12_resnet18.py": ((1, 1000), 11_689_512),
    "13_resnet50.py": ((1, 1000), 25_557_032),
    "14_vgg16.py": ((1, 1000), 138_357_544),
    "15_mobilenet_v1.py": ((1, 1000), 4_231_976),
    "16_mobilenet_v2.py": ((1, 1000), 3_504_872),
    "17_efficientnet_b0.py": ((1, 1000), 5_288_548),
    "18_densenet_block.py": ((1, 224, 28, 28), 586_048),
    "19_mingpt_block.py": ((1, 512, 768), 7_087_872),
    "20_swin_block.py": ((1, 56 * 56, 96), 112_347),
    "21_lstm.py": ((1, 10), 3_029_514),
}

#: the sandbox that runs a job has torch alone
ALLOWED_IMPORTS = {"math", "torch", "torch.nn", "torch.nn.functional"}


def load_at_batch_one(name: str):
    """(module, model, inputs) as the engine builds them, with the file's batch size patched to 1."""
    path = LEVEL3 / name
    assert problem_kind(path) == "model"
    module_name = f"level3_network_{path.stem}"
    rng = torch.random.get_rng_state()
    try:
        mod = import_problem(path, module_name)
    finally:
        sys.modules.pop(module_name, None)
    assert torch.equal(torch.random.get_rng_state(), rng), "importing the file drew random numbers"
    assert isinstance(mod.batch_size, int)
    mod.batch_size = 1
    model = build_model(mod, "cpu", torch.float32)
    inputs = make_inputs(mod, 0, "cpu", torch.float32)
    return mod, model, inputs


def test_the_suite_lists_every_network():
    assert sorted(p.name for p in LEVEL3.glob("*.py") if int(p.name[:2]) >= 12) == sorted(NETWORKS)


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_each_network_is_a_small_torch_only_model_file(name):
    path = LEVEL3 / name
    assert path.stat().st_size < MAX_SOURCE_BYTES // 64  # a few KB: far under the loader's limit
    tree = ast.parse(path.read_text())
    imports = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imports |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imports <= ALLOWED_IMPORTS, imports
    top = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert {"Model", "get_inputs", "get_init_inputs"} <= top
    assert "open(" not in path.read_text()


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_each_network_runs_one_forward_on_the_cpu_at_batch_one(name):
    shape, params = NETWORKS[name]
    _, model, inputs = load_at_batch_one(name)
    assert all(x.shape[0] == 1 for x in inputs)
    assert model.training  # called as constructed: BatchNorm on batch statistics, dropout p = 0
    assert sum(p.numel() for p in model.parameters()) == params
    with torch.no_grad():
        out = model(*inputs)
    assert isinstance(out, torch.Tensor) and tuple(out.shape) == shape
    assert out.dtype == torch.float32 and torch.isfinite(out).all()
    assert out.std() > 1e-3  # not collapsed to a constant by the initialisation


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_each_networks_float64_reference_runs_in_float64_and_agrees_with_fp32(name):
    # Gate 3's float64 branch casts the model as verify/model_outputs.py does: a reference that cannot be built,
    # or that still computes some of it in fp32, would make the job a harness error instead of a verdict
    _, model, inputs = load_at_batch_one(name)
    with torch.no_grad():
        out32 = model(*inputs)
        cast_float64(model)
        with default_dtype(torch.float64):
            out64 = model(*float64_inputs(inputs))
    assert out64.dtype == torch.float64
    assert all(t.dtype == torch.float64 for t in [*model.parameters(), *model.buffers()] if t.is_floating_point())
    err = ((out64 - out32.double()).abs().max() / out64.abs().max()).item()
    assert 0 < err < 1e-3  # fp32's rounding against float64's: close, and not the same computation

def test_the_mingpt_block_calls_its_mlp_through_a_lambda_closure_over_a_module_dict():
    """The point of the file: minGPT's `self.mlpf = lambda x: m.dropout(m.c_proj(m.act(m.c_fc(x))))`."""
    path = LEVEL3 / "19_mingpt_block.py"
    tree = ast.parse(path.read_text())
    (init,) = [f for c in tree.body if isinstance(c, ast.ClassDef) and c.name == "Model"
               for f in c.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"]
    assigns = {tuple(ast.unparse(t) for t in n.targets): n.value for n in init.body if isinstance(n, ast.Assign)}
    module_dict = assigns[("m", "self.mlp")]
    assert ast.unparse(module_dict.func) == "nn.ModuleDict"
    (arg,) = module_dict.args
    assert ast.unparse(arg.func) == "dict" and [k.arg for k in arg.keywords] == ["c_fc", "c_proj", "act", "dropout"]
    mlpf = assigns[("self.mlpf",)]
    assert isinstance(mlpf, ast.Lambda) and ast.unparse(mlpf) == "lambda x: m.dropout(m.c_proj(m.act(m.c_fc(x))))"

    _, model, (x,) = load_at_batch_one("19_mingpt_block.py")
    assert model.mlpf.__name__ == "<lambda>" and not isinstance(model.mlpf, torch.nn.Module)
    assert [c.cell_contents for c in model.mlpf.__closure__] == [model.mlp]
    assert set(model.mlp.keys()) == {"c_fc", "c_proj", "act", "dropout"}
    with torch.no_grad():  # causal: a change to the last token leaves every earlier position's output alone
        y = x.clone()
        y[:, -1] += 1.0
        a, b = model(x), model(y)
    assert torch.equal(a[:, :-1], b[:, :-1]) and not torch.equal(a[:, -1], b[:, -1])
