"""Bad: the grid rounds down, so the tail (xnumel % XBLOCK elements) is never computed."""
import triton
import triton.language as tl


@triton.jit
def pointwise_kernel(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    x = tl.load(in_ptr0 + xindex)
    tl.store(out_ptr0 + xindex, x * 2.0 + 1.0)


def run(in_ptr0, out_ptr0, xnumel, stream=None):
    pointwise_kernel[(xnumel // 128,)](in_ptr0, out_ptr0, xnumel, XBLOCK=128)
