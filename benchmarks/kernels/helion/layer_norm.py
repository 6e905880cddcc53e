"""Helion kernel file: layer norm over the last dim with weight and bias (Helion's `layer_norm` tutorial),
fp32, 4096 x 4096."""
import helion
import helion.language as hl
import torch

ROWS, COLS = 4096, 4096
EPS = 1e-5


@helion.kernel()
def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    for tile_m in hl.tile(m):
        row = x[tile_m, :]
        mean = torch.mean(row, dim=-1, keepdim=True)
        centered = row - mean
        var = torch.mean(centered * centered, dim=-1, keepdim=True)
        out[tile_m, :] = centered * torch.rsqrt(var + 1e-5) * weight[None, :] + bias[None, :]
    return out


def launch(x, weight, bias):
    return layer_norm(x, weight, bias)


def reference(x, weight, bias):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, EPS)


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randn(COLS), torch.randn(COLS)]
