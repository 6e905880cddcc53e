import torch
import torch.nn as nn


class Model(nn.Module):
    """LayerNorm of a residual sum, with learned affine parameters."""
    def __init__(self, features: int):
        super().__init__()
        self.ln = nn.LayerNorm(features)

    def forward(self, x, y):
        return self.ln(x + y)


def get_inputs():
    return [torch.randn(512, 768), torch.randn(512, 768)]


def get_init_inputs():
    return [768]
