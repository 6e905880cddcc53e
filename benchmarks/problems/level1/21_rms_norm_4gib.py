import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """RMSNorm over the channel dimension of a 4 GiB NCHW tensor (today's KernelBench size class)."""

    def __init__(self, num_features, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(num_features))

    def forward(self, x):
        rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)
        return x / rms * self.weight.view(1, -1, 1, 1)


batch_size = 64
features = 64
dim1 = 512
dim2 = 512  # 64 x 64 x 512 x 512 fp32 = 4 GiB
eps = 1e-5
# eager ~ 8 ms (estimate, not measured): ~7 passes over 4.3 GB; Inductor's fused kernel ~2 passes.

def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features, eps]
