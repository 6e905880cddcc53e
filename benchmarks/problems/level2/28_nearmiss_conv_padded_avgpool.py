import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Near miss for the graph rewrites: an average pool with padding after the convolution (its padded
    zeros are no convolution outputs, so the two do not compose into one convolution)."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)

    def forward(self, x):
        return F.relu(F.avg_pool2d(self.conv(x), kernel_size=2, stride=2, padding=1))


batch_size = 64
in_channels = 64
out_channels = 128
height = width = 64
kernel_size = 3


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
