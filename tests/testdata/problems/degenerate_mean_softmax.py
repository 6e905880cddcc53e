import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear, mean over the features (one left), softmax over that single feature: 1 for every finite input.

    A degenerate model (usually a bug): the rewrite stage computes the mean as a matrix-vector product and
    says that the output depends on the input only through whether it is finite.
    """

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.softmax(self.linear(x).mean(dim=1, keepdim=True), dim=1)


def get_inputs():
    return [torch.randn(64, 32)]


def get_init_inputs():
    return [32, 256]
