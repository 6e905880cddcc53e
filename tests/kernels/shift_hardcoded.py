"""Bad: bakes in the shift it saw on its first call (right for that data only)."""
import triton
import triton.language as tl

_SHIFT = []


@triton.jit
def shift_kernel(in_ptr0, out_ptr0, m, xnumel, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < xnumel
    x = tl.load(in_ptr0 + xindex, mask=xmask)
    tl.store(out_ptr0 + xindex, x - m, mask=xmask)


def run(in_ptr0, in_ptr1, out_ptr0, xnumel, stream=None):
    if not _SHIFT:
        _SHIFT.append(float(in_ptr1[0]))
    shift_kernel[(triton.cdiv(xnumel, 128),)](in_ptr0, out_ptr0, _SHIFT[0], xnumel, XBLOCK=128)
