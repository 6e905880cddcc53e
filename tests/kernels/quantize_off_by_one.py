"""Bad: integer output off by one (a float tolerance of 1e-3*|ref| would hide it)."""
import triton
import triton.language as tl


@triton.jit
def quantize_kernel(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < xnumel
    x = tl.load(in_ptr0 + xindex, mask=xmask)
    tl.store(out_ptr0 + xindex, (x * 1000000.0).to(tl.int32) + 1, mask=xmask)


def run(in_ptr0, out_ptr0, xnumel, stream=None):
    quantize_kernel[(triton.cdiv(xnumel, 128),)](in_ptr0, out_ptr0, xnumel, XBLOCK=128)
