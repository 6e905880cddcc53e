"""A Helion kernel Helion refuses to compile: a tile loop over a Python list is not a Helion construct."""
import torch

import helion
import helion.language as hl


@helion.kernel()
def broken(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size()):
        out[tile] = x[tile].numpy()  # not a tensor operation Helion can lower
    return out


def launch(x):
    return broken(x)


def reference(x):
    return x


def get_inputs():
    return [torch.randn(1024)]
