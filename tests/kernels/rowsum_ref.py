"""Reference: out[i] = sum_j x[i, j] for a row-major [xnumel, r0_numel] input (persistent reduction)."""
import triton
import triton.language as tl


@triton.jit
def rowsum_kernel(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK: tl.constexpr, R0_BLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    rindex = tl.arange(0, R0_BLOCK)[None, :]
    mask = (xindex < xnumel) & (rindex < r0_numel)
    x = tl.load(in_ptr0 + xindex * r0_numel + rindex, mask=mask, other=0.0)
    total = tl.sum(x, axis=1)[:, None]
    tl.store(out_ptr0 + xindex, total, mask=xindex < xnumel)


def run(in_ptr0, out_ptr0, xnumel, r0_numel, stream=None):
    rowsum_kernel[(triton.cdiv(xnumel, 16),)](in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK=16,
                                              R0_BLOCK=triton.next_power_of_2(r0_numel))
