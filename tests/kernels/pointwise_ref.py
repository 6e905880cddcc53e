"""Reference: out = x * 2 + 1 over xnumel elements (masked tail)."""
import triton
import triton.language as tl


@triton.jit
def pointwise_kernel(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < xnumel
    x = tl.load(in_ptr0 + xindex, mask=xmask)
    tl.store(out_ptr0 + xindex, x * 2.0 + 1.0, mask=xmask)


def run(in_ptr0, out_ptr0, xnumel, stream=None):
    pointwise_kernel[(triton.cdiv(xnumel, 128),)](in_ptr0, out_ptr0, xnumel, XBLOCK=128)
