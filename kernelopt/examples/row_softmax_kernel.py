"""Single-kernel problem: a row softmax in Triton, one row per program.

The default problem of `kernelopt optimize` on a machine without a GPU: it runs
on the Triton interpreter there (correctness only).
"""
import torch
import triton
import triton.language as tl

ROWS, COLS = 64, 1000


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=mask)


def launch(x):
    out = torch.empty_like(x)
    BLOCK = 1024
    softmax_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=BLOCK, num_warps=4)
    return out


def reference(x):
    return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(ROWS, COLS)]
