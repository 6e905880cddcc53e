"""A small ConvTranspose2d (stride 2, output_padding 1), then tanh and a scale: the CPU capture of a
transposed-convolution library group (tests/test_conv_transpose_phases.py)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.ct = nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x):
        return torch.tanh(self.ct(x)) * 2.0


def get_inputs():
    return [torch.randn(2, 8, 5, 5)]


def get_init_inputs():
    return []
