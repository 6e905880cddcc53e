import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """RMSNorm over the channel dimension of an NCHW tensor, with a per-channel weight."""

    def __init__(self, num_features, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(num_features))

    def forward(self, x):
        rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)
        return x / rms * self.weight.view(1, -1, 1, 1)


batch_size = 32
features = 64
dim1 = 256
dim2 = 256
eps = 1e-5
# eager ~ 1.1 ms: pow (2 passes) + mean (1) + div (2) + mul (2) over a 537 MB tensor (3.8 GB).
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 1.23 ms.

def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features, eps]
