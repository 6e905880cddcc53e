import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matrix product with a very large inner dimension (K=524288) and a small output.

    Inductor's max-autotune may load split-K variants and benchmark modules next to
    the model's own output module; capture must pick the model's.
    """

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


M = 256
N = 256
K = 524288  # A and B are 512 MiB each; C is 256 KiB
# eager ~ 1.4 ms (estimate, not measured): 68.7 GFLOP at cuBLAS fp32's ~50 TFLOP/s.

def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
