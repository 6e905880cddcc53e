import torch
import torch.nn as nn


class Model(nn.Module):
    """A model that refuses any dtype but float32: its float64 reference cannot be computed
    (tests/test_float64_reference.py)."""
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        assert x.dtype == torch.float32, f"float32 only, got {x.dtype}"
        return torch.relu(self.fc(x)) * 0.5


def get_inputs():
    return [torch.randn(32, 48)]


def get_init_inputs():
    return [48, 64]
