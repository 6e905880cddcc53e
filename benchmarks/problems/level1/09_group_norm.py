import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """GroupNorm on an NCHW tensor, with non-trivial affine parameters."""

    def __init__(self, num_groups, num_features):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)
        with torch.no_grad():
            self.gn.weight.normal_(1.0, 0.1)
            self.gn.bias.normal_(0.0, 0.1)

    def forward(self, x):
        return self.gn(x)


batch_size = 32
features = 64
num_groups = 8
dim1 = 256
dim2 = 256
# eager ~ 0.46 ms: statistics (1 read) + normalize (read + write) over a 537 MB tensor (1.6 GB).
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 0.82 ms.

def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [num_groups, features]
