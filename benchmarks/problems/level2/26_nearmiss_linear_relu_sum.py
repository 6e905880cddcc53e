import torch
import torch.nn as nn


class Model(nn.Module):
    """Near miss for the graph rewrites: a ReLU between the linear layer and the sum (no identity holds)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x)).sum(dim=1, keepdim=True)


batch_size = 8192
in_features = 2048
out_features = 4096


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
