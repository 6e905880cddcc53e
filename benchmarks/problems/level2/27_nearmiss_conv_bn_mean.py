import torch
import torch.nn as nn


class Model(nn.Module):
    """Near miss for the graph rewrites: a training-mode BatchNorm (batch statistics) between the
    convolution and the global mean (no identity holds)."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        return self.bn(self.conv(x)).mean(dim=(2, 3))


batch_size = 64
in_channels = 64
out_channels = 128
height = width = 64
kernel_size = 3


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
