"""Test data: a model whose library call does not reproduce itself run to run.

`kernelopt_testdata::order_dependent_scale` scales by 1 + k·1e-6, k cycling with every
call, like a library algorithm whose atomics add in a different order each run: the
spread does not depend on the RNG seed. Inductor keeps the op as an extern call.
"""
import itertools

import torch
import torch.nn as nn

_calls = itertools.count()


@torch.library.custom_op("kernelopt_testdata::order_dependent_scale", mutates_args=())
def order_dependent_scale(x: torch.Tensor) -> torch.Tensor:
    return x * (1.0 + 1e-6 * (next(_calls) % 4))


@order_dependent_scale.register_fake
def _(x):
    return torch.empty_like(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(64, 32)

    def forward(self, x):
        return torch.relu(order_dependent_scale(self.linear(x))) * 2.0


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
