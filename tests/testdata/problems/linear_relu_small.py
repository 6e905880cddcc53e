import torch
import torch.nn as nn


class Model(nn.Module):
    """A small Linear (a library GEMM on the CPU backend) with a ReLU-and-scale epilogue."""
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.fc(x)) * 0.5


def get_inputs():
    return [torch.randn(32, 48)]


def get_init_inputs():
    return [48, 64]
