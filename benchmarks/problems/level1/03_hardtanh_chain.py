import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Chain of clamping activations: hardtanh, affine, hardtanh, hardswish."""

    def __init__(self, scale, shift):
        super().__init__()
        self.scale = scale
        self.shift = shift

    def forward(self, x):
        x = F.hardtanh(x, min_val=-2.0, max_val=2.0)
        x = x * self.scale + self.shift
        x = F.hardtanh(x, min_val=-1.0, max_val=1.0)
        return F.hardswish(x)


batch_size = 8192
dim = 12288
scale = 0.75
shift = 0.1
# eager ~ 1.2 ms: 5 elementwise ops, ~10 passes over a 403 MB tensor (4.0 GB / 3.5 TB/s).
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 0.96 ms.

def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [scale, shift]
