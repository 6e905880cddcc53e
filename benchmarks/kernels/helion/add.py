"""Helion kernel file: out = x + y (the shape of Helion's `add` tutorial), fp32, 16M elements."""
import helion
import helion.language as hl
import torch

N = 1 << 24


@helion.kernel()
def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(out.size()):
        out[tile] = x[tile] + y[tile]
    return out


def launch(x, y):
    return add(x, y)


def reference(x, y):
    return x + y


def get_inputs():
    return [torch.randn(N), torch.randn(N)]
