"""benchmarks/conv_implicit_gemm.py: the Triton implicit-GEMM convolution is aten.convolution for every 2-D
forward case it accepts (strides, padding, dilation, groups, bias; NCHW or channels-last operands; either
output layout), and says why where it does not apply. Without a GPU it runs in Triton's interpreter, which
computes its dots in fp32 (the split precisions are timed and their errors measured by
benchmarks/conv_fp32.py on a GPU)."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from benchmarks import conv_implicit_gemm as cig

CASES = [  # input, weight, bias, stride, padding, dilation, groups
    ((2, 8, 9, 11), (16, 8, 3, 3), True, (1, 1), (1, 1), (1, 1), 1),
    ((2, 8, 9, 11), (16, 8, 3, 3), False, (2, 1), (0, 2), (1, 2), 1),
    ((1, 16, 7, 7), (8, 4, 3, 3), True, (1, 1), (1, 1), (1, 1), 4),  # grouped
    ((1, 4, 6, 6), (4, 1, 3, 3), False, (1, 1), (1, 1), (1, 1), 4),  # depthwise
    ((2, 40, 5, 5), (70, 40, 1, 1), True, (1, 1), (0, 0), (1, 1), 1),  # 1x1, channels past one block
    ((1, 3, 10, 10), (5, 3, 5, 5), True, (3, 3), (2, 2), (1, 1), 1),  # 5x5, stride past the kernel's reach
]


@pytest.mark.parametrize("nhwc", [False, True], ids=["nchw", "channels_last"])
@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-g{c[6]}" for c in CASES])
def test_it_is_aten_convolution_for_every_accepted_case(case, nhwc):
    xs, ws, has_bias, stride, padding, dilation, groups = case
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(xs, generator=g), torch.randn(ws, generator=g)
    b = torch.randn(ws[0], generator=g) if has_bias else None
    if nhwc:
        x, w = x.contiguous(memory_format=torch.channels_last), w.contiguous(memory_format=torch.channels_last)
    ref = F.conv2d(x.double(), w.double(), None if b is None else b.double(), stride, padding, dilation, groups)
    y = cig.conv2d(x, w, b, stride, padding, dilation, groups, channels_last_out=not nhwc)
    assert y.shape == ref.shape and y.dtype == torch.float32
    assert y.is_contiguous(memory_format=torch.contiguous_format if nhwc else torch.channels_last)
    assert (y.double() - ref).abs().max().item() <= 1e-5 * max(1.0, ref.abs().max().item())


def test_it_says_why_it_does_not_apply_and_refuses_bad_arguments():
    x, w = torch.randn(1, 4, 6, 6), torch.randn(4, 4, 3, 3)
    assert cig.applies(x, w, transposed=False) is None
    assert "transposed" in cig.applies(x, w, transposed=True)
    assert "3-D" in cig.applies(torch.randn(1, 4, 3, 6, 6), torch.randn(4, 4, 3, 3, 3), transposed=False)
    assert "float64" in cig.applies(x.double(), w.double(), transposed=False)
    with pytest.raises(ValueError, match="precision"):
        cig.conv2d(x, w, None, (1, 1), (0, 0), (1, 1), 1, precision="fp8")
    with pytest.raises(ValueError, match="groups"):
        cig.conv2d(x, w, None, (1, 1), (0, 0), (1, 1), 3)
    assert set(cig.PRECISIONS) == {"bf16x3", "tf32x3", "tf32", "ieee"}
