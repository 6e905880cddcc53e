import torch
import torch.nn as nn


class Model(nn.Module):
    """Conv2d, the mean over its output channels (a spatial-attention map, as CBAM's channel pooling computes
    one), scaled, sigmoid."""

    def __init__(self, in_channels, out_channels, kernel_size, scaling):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.scaling = scaling

    def forward(self, x):
        x = self.conv(x)
        x = x.mean(dim=1, keepdim=True)
        return torch.sigmoid(x * self.scaling)


batch_size = 16
in_channels = 64
out_channels = 128
height = width = 128
kernel_size = 3
scaling = 0.5
# eager: the 3x3 convolution is 38.7 GFLOP (a few ms in fp32); its 128 output channels (134 MB) are then averaged
# to one. Input 67 MB. On an H100 (2026-12-07) the compiled baseline ran 0.23 ms, its convolution 0.13 ms (cuDNN, TF32).


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, scaling]
