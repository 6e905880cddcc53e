"""benchmarks/compile_time_probe.py reads Inductor's own autotune lines (issue 37), with the capture's reader
(compiled/autotune_log.py): the totals that said where an H100's ResNet-18 capture spent its 502 s."""
from __future__ import annotations

from benchmarks.compile_time_probe import triton_cache_stats
from kernelopt.compiled.autotune_log import AutotuneSummary

# two of the lines the H100 run printed (benchmarks/results/2026-12-07-h100-cudnn-helion-resnet/call3-resnet18/l3.log)
LOG = """[child pid 3885] [child pid 3904] SingleProcess AUTOTUNE benchmarking takes 0.3450 seconds and 0.0070 seconds precompiling for 10 choices
[child pid 3885] [child pid 3904]   convolution 0.0618 ms 100.0%
[child pid 3885] [child pid 3904] SingleProcess AUTOTUNE benchmarking takes 97.8922 seconds and 0.0003 seconds precompiling for 18 choices
SubProcess AUTOTUNE benchmarking takes 1.5 seconds and 2.5 seconds precompiling for 4 choices and 0.1 seconds prescreening
"""


def test_inductors_autotune_lines_are_summed_per_shape():
    assert AutotuneSummary.of(LOG).to_dict() == {"shapes": 3, "choices": 32, "benchmarking_s": 99.7,
                                                 "precompiling_s": 2.5, "slowest_shape_s": 97.9}
    assert AutotuneSummary.of("no autotuning here").to_dict() == {"shapes": 0, "choices": 0, "benchmarking_s": 0.0,
                                                                  "precompiling_s": 0.0, "slowest_shape_s": 0.0}


def test_a_kernel_compiled_under_two_cache_keys_is_counted(tmp_path):
    for key, name in (("a" * 8, "triton_tem_fused_convolution_0"), ("b" * 8, "triton_tem_fused_convolution_0"),
                      ("c" * 8, "triton_poi_fused_relu_1")):
        (tmp_path / key).mkdir()
        (tmp_path / key / f"{name}.cubin").write_bytes(b"\x7fELF")
        (tmp_path / key / f"{name}.json").write_text("{}")
    assert triton_cache_stats(tmp_path) == {"cubins": 3, "kernels": 2, "compiled_under_several_keys": 1}
    assert triton_cache_stats(tmp_path / "absent") == {"cubins": 0, "kernels": 0, "compiled_under_several_keys": 0}
