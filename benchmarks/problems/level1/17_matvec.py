import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matrix-vector product A @ b with b given as a (K, 1) matrix."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


M = 16384
K = 16384
# eager ~ 0.31 ms: memory-bound, one read of the 1.07 GB matrix (bounded by the input cap).
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 0.27 ms.

def get_inputs():
    return [torch.randn(M, K), torch.randn(K, 1)]


def get_init_inputs():
    return []
