import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Linear, scale, residual add, clamp, logsumexp over features, then x * mish(x)."""

    def __init__(self, input_size, hidden_size, scale_factor, clamp_min, clamp_max):
        super().__init__()
        self.matmul = nn.Linear(input_size, hidden_size)
        self.scale_factor = scale_factor
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        x = self.matmul(x)
        x = x * self.scale_factor
        x = x + x
        x = torch.clamp(x, self.clamp_min, self.clamp_max)
        x = torch.logsumexp(x, dim=1, keepdim=True)
        return x * F.mish(x)


batch_size = 16384
input_size = 1024
hidden_size = 2048
scale_factor = 2.0
clamp_min = -10.0
clamp_max = 10.0
# eager ~ 2.0 ms: addmm 68.7 GFLOP (1.5 ms) + scale, add, clamp and logsumexp's amax/sub/exp/sum
# (~13 passes over 134 MB, 0.5 ms).
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 1.86 ms.

def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, scale_factor, clamp_min, clamp_max]
