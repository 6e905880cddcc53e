"""Helion kernel file: a row softmax (Helion's `softmax` tutorial's two-pass form), fp32, 4096 x 2560."""
import helion
import helion.language as hl
import torch

ROWS, COLS = 4096, 2560


@helion.kernel()
def softmax(x: torch.Tensor) -> torch.Tensor:
    n, _m = x.size()
    out = torch.empty_like(x)
    for tile_n in hl.tile(n):
        values = x[tile_n, :]
        amax = torch.amax(values, dim=1, keepdim=True)
        exp = torch.exp(values - amax)
        out[tile_n, :] = exp / torch.sum(exp, dim=1, keepdim=True)
    return out


def launch(x):
    return softmax(x)


def reference(x):
    return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(ROWS, COLS)]
