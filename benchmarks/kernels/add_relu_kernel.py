"""Single-kernel problem: out = relu(x + y), a pointwise Triton kernel."""
import torch
import triton
import triton.language as tl

N = 1 << 16


@triton.jit
def add_relu_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(v, 0.0), mask=mask)


def launch(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
    add_relu_kernel[grid](x, y, out, n, BLOCK_SIZE=1024, num_warps=4)
    return out


def reference(x, y):
    return torch.relu(x + y)


def get_inputs():
    return [torch.randn(N), torch.randn(N)]
