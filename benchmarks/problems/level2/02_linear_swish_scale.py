import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Linear layer followed by Swish (x * sigmoid(x)) and a constant scaling."""

    def __init__(self, in_features, out_features, scaling_factor):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x):
        x = self.linear(x)
        x = x * torch.sigmoid(x)
        return x * self.scaling_factor


batch_size = 16384
in_features = 1024
out_features = 2048
scaling_factor = 2.0
# eager ~ 1.8 ms: addmm 68.7 GFLOP (1.5 ms) + sigmoid, mul, mul (7 passes over 134 MB, 0.27 ms).
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 1.61 ms.

def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scaling_factor]
