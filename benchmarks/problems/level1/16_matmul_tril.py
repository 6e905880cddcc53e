import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Product of two lower-triangular matrices, lower triangle kept: tril(A @ B)."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.tril(torch.matmul(A, B))


N = 4096
# eager ~ 3.1 ms: a dense 4096^3 GEMM (137 GFLOP / 45 TFLOP/s) + tril (read + write 67 MB).
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 2.73 ms.

def get_inputs():
    return [torch.tril(torch.randn(N, N)), torch.tril(torch.randn(N, N))]


def get_init_inputs():
    return []
