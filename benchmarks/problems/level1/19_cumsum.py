import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Inclusive prefix sum (scan) along the last dimension."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumsum(x, dim=self.dim)


batch_size = 65536
dim = 4096
scan_dim = 1
# eager ~ 0.61 ms: read + write of a 1.07 GB tensor (2.1 GB).
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 1.11 ms.

def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [scan_dim]
