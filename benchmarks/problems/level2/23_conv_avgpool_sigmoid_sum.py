import torch
import torch.nn as nn


class Model(nn.Module):
    """Conv2d, AvgPool2d(4), sigmoid, sum over all but the batch."""

    def __init__(self, in_channels, out_channels, kernel_size, pool_kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.avg_pool = nn.AvgPool2d(pool_kernel_size)

    def forward(self, x):
        x = self.conv(x)
        x = self.avg_pool(x)
        x = torch.sigmoid(x)
        return torch.sum(x, dim=[1, 2, 3])


batch_size = 64
in_channels = 64
out_channels = 128
height = width = 128
kernel_size = 3
pool_kernel_size = 4
# eager ~ 4 ms: a 3x3 convolution (about 155 GFLOP) averaged over 4x4 windows: composed, one 6x6 convolution
# of stride 4 (a quarter of the multiply-adds).


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, pool_kernel_size]
