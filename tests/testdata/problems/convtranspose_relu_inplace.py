import torch
import torch.nn as nn


class Model(nn.Module):
    """A strided transposed convolution whose ReLU Inductor writes in place into its result (channels-last in and
    out; aten's convolution on the CPU backend with TORCHINDUCTOR_CPP_WEIGHT_PREPACK=0)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(2, 4, 5, 5).to(memory_format=torch.channels_last)]


def get_init_inputs():
    return []
