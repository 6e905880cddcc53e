import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv2d, constant scaling, then the minimum over channels (exact reduction)."""

    def __init__(self, in_channels, out_channels, kernel_size, scale_factor):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.scale_factor = scale_factor

    def forward(self, x):
        x = self.conv(x)
        x = x * self.scale_factor
        return torch.min(x, dim=1, keepdim=True)[0]


batch_size = 64
in_channels = 32
out_channels = 64
height = 128
width = 128
kernel_size = 3
scale_factor = 2.0
# eager ~ 1.1 ms: conv 38.7 GFLOP (0.86 ms) + scale (2 passes) + channel min (1 pass) over 268 MB (0.23 ms).
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 1.48 ms.

def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, scale_factor]
