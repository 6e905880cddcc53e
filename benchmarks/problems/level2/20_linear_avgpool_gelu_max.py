import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Linear, AvgPool1d over the features, GELU, scale, max over the features."""

    def __init__(self, in_features, out_features, pool_kernel_size, scale_factor):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.pool = nn.AvgPool1d(kernel_size=pool_kernel_size)
        self.scale_factor = scale_factor

    def forward(self, x):
        x = self.linear(x)
        x = self.pool(x.unsqueeze(1)).squeeze(1)
        x = F.gelu(x) * self.scale_factor
        return torch.max(x, dim=1).values


batch_size = 4096
in_features = 4096
out_features = 8192
pool_kernel_size = 16
scale_factor = 2.0
# eager ~ 6 ms: addmm 275 GFLOP; the pool averages 16 outputs: a linear with averaged rows has 512 outputs.


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, pool_kernel_size, scale_factor]
