"""Kernel chains (compiled.group.kernel_chains) and the fusion agent that writes them (`llm_fusion`).

On output modules Inductor wrote on the H200 (no GPU needed to read them): level2/03's conv + BN + ReLU
launches a two-pass batch norm as four Triton kernels after cuDNN's convolution, joined by buffers only
they read — the chain a fused kernel replaces. It is found, re-stitched as one `run(...)` launch (its
intermediates gone from call()), kept out of a combination with its own kernels, searched only where the
job names a generator that fuses chains, and its request to the agent holds what the agent needs.
"""
from __future__ import annotations

import ast
from pathlib import Path

from kernelopt.agents.codegen import CodegenGenerator
from kernelopt.agents.fusion import FusionGenerator
from kernelopt.agents.llm import LLMSettings
from kernelopt.compiled.decompose import decompose
from kernelopt.compiled.group import (
    CHAIN_OP,
    all_groups,
    kernel_chains,
    library_groups,
    reference_source,
    rewrite_module,
    target_overlaps,
)
from kernelopt.compiled.module_parse import find_call
from kernelopt.pipeline.model_job import _group_target
from kernelopt.profiling.baseline import BaselineProfile, KernelShare
from kernelopt.search.registry import applicable, make_generator, target_kind_reason
from kernelopt.search.strategy import plan_groups
from tests.llm_server import ScriptedLLM

DATA = Path(__file__).parent / "testdata"
BN = DATA / "captured_h200" / "03_conv_bn_relu" / "baseline_module.py"
CONV_BN_TEMPLATE = DATA / "captured" / "conv_bn_relu" / "baseline_module.py"  # Inductor chose a Triton conv


def _chain(path: Path = BN):
    source = path.read_text()
    (chain,) = kernel_chains(source)
    return source, chain


def _launched(source: str) -> list[str]:
    """The names call() launches (`<name>.run(...)`), in order."""
    call = find_call(ast.parse(source))
    return [n.func.value.id for n in ast.walk(call) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr == "run" and isinstance(n.func.value, ast.Name)]


def test_the_two_pass_batch_norm_after_a_convolution_is_one_chain_of_four_kernels():
    source, chain = _chain()
    graph = decompose(source)
    assert chain.op == CHAIN_OP and chain.anchor_kind == "triton" and not chain.reason
    assert chain.kernels == graph.fusible_groups[0] and len(chain.kernels) == 4
    assert all(graph.kernels[k].kind in ("reduction", "persistent", "pointwise") for k in chain.kernels)
    assert chain.name == f"_kernelopt_group_chain_{chain.anchor}"
    # what travels only between its kernels is dropped from the interface; what leaves it is an output
    assert chain.dropped and set(chain.dropped).isdisjoint(chain.params)
    assert chain.outputs and set(chain.outputs) <= set(chain.params)
    assert chain.arg_names and all(r.startswith(("in_ptr", "out_ptr", "in_out_ptr")) for r in chain.arg_names)
    # library groups are what they were: a chain is a target of its own
    assert all(g.op != CHAIN_OP for g in library_groups(source))
    assert [g.name for g in all_groups(source)] == [g.name for g in library_groups(source)] + [chain.name]


def test_a_chain_is_cut_at_a_triton_template_which_anchors_a_library_group():
    source = CONV_BN_TEMPLATE.read_text()
    graph = decompose(source)
    (run,) = graph.fusible_groups
    assert any(graph.kernels[k].kind == "template" for k in run)
    chains = kernel_chains(source, graph)
    assert chains and all(graph.kernels[k].kind != "template" for c in chains for k in c.kernels)
    assert all(len(c.kernels) >= 2 for c in chains)


def test_a_re_stitched_chain_is_one_launch_and_its_intermediates_are_gone():
    source, chain = _chain()
    out = rewrite_module(source, [chain.name])
    before, after = _launched(source), _launched(out)
    assert set(chain.kernels) <= set(before) and set(chain.kernels).isdisjoint(after)
    assert after.count(chain.name) == 1
    call = ast.unparse(find_call(ast.parse(out)))
    assert f"{chain.name}.run({', '.join(chain.params)})" in call
    assert not any(f"{b} = empty_strided" in call for b in chain.dropped)  # the candidate keeps them on chip
    assert f"\n{chain.name} = None" in out
    assert rewrite_module(source, []) == source  # nothing replaced: bit for bit the module
    # the reference candidate runs Inductor's own four launches inside run()
    ref = reference_source(chain)
    assert all(f"{k}.run(" in ref for k in chain.kernels)


def test_a_chain_never_shares_a_combination_with_its_own_kernels():
    source, chain = _chain()
    overlaps = target_overlaps(all_groups(source))
    assert set(chain.kernels) <= overlaps[chain.name]


def _profile(names: list[str], share: float) -> BaselineProfile:
    ks = [KernelShare(n, "triton", share / len(names), share / len(names)) for n in names]
    return BaselineProfile(end_to_end_ms=1.0, noise_pct=0.1, timing_method="do_bench", gpu_total_ms=1.0,
                           kernels=ks, library_share=1.0 - share, triton_share=share)


def test_a_chain_is_searched_only_where_the_job_names_a_generator_that_fuses_chains():
    source, chain = _chain()
    prof = _profile(chain.kernels, 0.4)
    (d,) = [d for d in plan_groups([chain], prof, 1.03) if d.name == chain.name]  # the default generators
    assert not d.searched and "no generator of this job works on chain targets" in d.reason
    assert "llm_fusion does" in d.reason
    (d,) = plan_groups([chain], prof, 1.03, ["launch_config", "llm_fusion"])
    assert d.searched and d.kind == "group:fusion" and abs(d.share - 0.4) < 1e-9
    assert "kernel chain of 4 adjacent Triton kernels" in d.reason
    assert target_kind_reason(["llm_fusion"], "chain") is None


def test_each_agent_declines_the_other_agents_targets_in_words():
    source, chain = _chain()
    (conv,) = [g for g in library_groups(source) if g.op == "convolution"]
    settings = LLMSettings(base_url="http://127.0.0.1:9/v1", model="m", api_key="k")
    chain_t, conv_t = _group_target(chain, 0.4, "strict"), _group_target(conv, 0.5, "strict")
    assert FusionGenerator(settings).applicable(chain_t) is None
    assert "library groups to `llm_codegen`" in (FusionGenerator(settings).applicable(conv_t) or "")
    assert "kernel chains go to the fusion agent" in (CodegenGenerator(settings).applicable(chain_t) or "")
    # without an endpoint the registry's generator says so
    assert applicable(make_generator("llm_fusion"), chain_t)


def test_the_fusion_request_holds_the_chain_its_intermediates_interface_reference_and_kernels():
    source, chain = _chain()
    target = _group_target(chain, 0.4, "strict")
    with ScriptedLLM(["I would keep the batch statistics in registers."]) as server:
        gen = FusionGenerator(LLMSettings.from_env(server.env()))
        (cand,) = gen.propose(target, [], [], 1)
    (req,) = server.requests
    system = req["body"]["messages"][0]["content"]
    assert "chain of Triton kernels" in system and "KERNELOPT_PRECISION" in system
    text = "\n".join(m["content"] for m in req["body"]["messages"] if m["role"] == "user")
    assert f"Fuse this kernel chain ({chain.name}) of 4 Triton kernels" in text
    assert all(f"`{k}`" in text for k in chain.kernels) and "@triton.jit" in text
    assert all(f"`{b}`" in text for b in chain.dropped) and "need not write them" in text
    assert f"`run({', '.join(chain.params + ['stream=None'])})`" in text
    assert f"def run({', '.join(chain.params)}, stream=None):" in text  # Inductor's statements, the reference
    assert "Precision policy: strict" in text and "# kernel path:" not in text
    # the convolution's output, known to call() only through its assert_size_stride, is stated like the rest:
    # the agent reads it in its channels-last layout
    assert ("- `buf2` (in_ptr0, input: read only): float32, shape [32, 128, 128, 128], "
            "stride [2097152, 1, 16384, 128]") in text and "shape not stated" not in text
    assert cand.generator == "llm_fusion" and cand.rejected and "prose only" in cand.rejected
    assert gen.usage()["agents"]["fusion"]["calls"] == 1
