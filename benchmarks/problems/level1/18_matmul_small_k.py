import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matrix product with a tiny inner dimension (K=32): output-write bound."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


M = 16384
N = 16384
K = 32
# eager ~ 0.5 ms: writes a 1.07 GB output (0.31 ms) and does 17 GFLOP (0.38 ms), overlapping.
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 0.64 ms.

def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
