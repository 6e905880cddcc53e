"""A valid model that does not compile to one graph: a graph break in forward."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        y = torch.relu(self.lin(x))
        torch._dynamo.graph_break()
        return y * 2


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return []
