import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Max over the last dimension, returning both the values and their indices (exact op)."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        values, indices = torch.max(x, dim=self.dim)
        return values, indices


batch_size = 64
dim1 = 256
dim2 = 16384
reduce_dim = -1
# eager ~ 0.31 ms: one read of a 1.07 GB tensor (single-pass; bounded by the input cap).
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 0.36 ms.

def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
