import torch
import torch.nn as nn


class Model(nn.Module):
    """A matrix multiplication by a weight, a scale, then the mean over the output features."""

    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) / in_features ** 0.5)
        self.scale = scale

    def forward(self, x):
        return (torch.matmul(x, self.weight.T) * self.scale).mean(dim=1)


batch_size = 8192
in_features = 4096
out_features = 4096
scale = 1.5
# eager ~ 6 ms: mm 275 GFLOP + mean. An exact identity computes it as x @ mean of the weight rows (a GEMV).


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
