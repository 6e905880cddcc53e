import torch
import torch.nn as nn


class Model(nn.Module):
    """Convolution (cuDNN), batch norm in training mode, ReLU."""
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(8, 16, 32, 32)]


def get_init_inputs():
    return [16, 32]
