import torch
import torch.nn as nn


class Model(nn.Module):
    """A convolution whose ReLU Inductor writes in place into the convolution's own result (channels-last in,
    channels-last out): on the GPU, the shape of most convolution + pointwise epilogues; on the CPU backend
    when its weight prepacking is off (TORCHINDUCTOR_CPP_WEIGHT_PREPACK=0), so aten's convolution is called."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(2, 4, 8, 8).to(memory_format=torch.channels_last)]


def get_init_inputs():
    return []
