import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x @ torch.ones(3, 3)  # wrong shape for the input


def get_inputs():
    return [torch.randn(4, 5)]


def get_init_inputs():
    return []
