"""Helion kernel file: relu(A @ B + bias), the GEMM's epilogue fused in the kernel (a common fused-epilogue
shape), fp32 inputs, fp32 accumulator, 4096 x 1024 x 4096. `tl.dot` of fp32 tiles runs TF32: judged under
`tf32`."""
import helion
import helion.language as hl
import torch

M, K, N = 4096, 1024, 4096


@helion.kernel()
def gemm_bias_relu(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    m, k = x.size()
    _k, n = w.size()
    out = torch.empty([m, n], dtype=x.dtype, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = torch.addmm(acc, x[tile_m, tile_k], w[tile_k, tile_n])
        out[tile_m, tile_n] = torch.relu(acc + bias[tile_n])
    return out


def launch(x, w, bias):
    return gemm_bias_relu(x, w, bias)


def reference(x, w, bias):
    return torch.relu(x @ w + bias)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N), torch.randn(N)]
