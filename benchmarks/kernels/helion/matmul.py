"""Helion kernel file: C = A @ B with an fp32 accumulator (Helion's `matmul` tutorial), fp32, 2048^3.

`hl.dot` of fp32 tiles runs Triton's `tl.dot`, which uses TF32 tensor cores by default: this file is
judged under the `tf32` precision policy (its reference is fp32 `torch.matmul`)."""
import helion
import helion.language as hl
import torch

M = K = N = 2048


@helion.kernel()
def matmul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    m, k = x.size()
    _k, n = y.size()
    out = torch.empty([m, n], dtype=x.dtype, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = torch.addmm(acc, x[tile_m, tile_k], y[tile_k, tile_n])
        out[tile_m, tile_n] = acc
    return out


def launch(x, y):
    return matmul(x, y)


def reference(x, y):
    return x @ y


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]
