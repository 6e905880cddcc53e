import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv2d, then logsumexp over the channel dimension (one map per sample)."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        x = self.conv(x)
        return torch.logsumexp(x, dim=1, keepdim=True)


batch_size = 64
in_channels = 64
out_channels = 128
height = 64
width = 64
kernel_size = 3
# eager ~ 1.3 ms (estimate, not yet measured): conv 38.7 GFLOP (1.1 ms at ~35 TFLOP/s) + logsumexp over
# channels (max, exp-sum: ~4 passes over a 134 MB activation, 0.17 ms). Input 67 MB.

def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
