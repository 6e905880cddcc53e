"""Reference, in place: in_out_ptr0 += in_ptr0 (a bias add into an existing buffer)."""
import triton
import triton.language as tl


@triton.jit
def add_inplace_kernel(in_out_ptr0, in_ptr0, xnumel, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < xnumel
    acc = tl.load(in_out_ptr0 + xindex, mask=xmask)
    b = tl.load(in_ptr0 + xindex, mask=xmask)
    tl.store(in_out_ptr0 + xindex, acc + b, mask=xmask)


def run(in_out_ptr0, in_ptr0, xnumel, stream=None):
    add_inplace_kernel[(triton.cdiv(xnumel, 128),)](in_out_ptr0, in_ptr0, xnumel, XBLOCK=128)
