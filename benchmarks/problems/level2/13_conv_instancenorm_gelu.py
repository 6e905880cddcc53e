import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv2d, InstanceNorm2d (affine, per-sample statistics), then GELU."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.instance_norm = nn.InstanceNorm2d(out_channels, affine=True)
        with torch.no_grad():
            self.instance_norm.weight.normal_(1.0, 0.1)
            self.instance_norm.bias.normal_(0.0, 0.1)

    def forward(self, x):
        x = self.conv(x)
        x = self.instance_norm(x)
        return F.gelu(x)


batch_size = 128
in_channels = 32
out_channels = 64
height = 64
width = 64
kernel_size = 3
# eager ~ 0.8 ms (estimate, not yet measured): conv 19.3 GFLOP (0.6 ms at ~35 TFLOP/s, cuDNN IEEE fp32)
# + instance norm (3 passes) and gelu (2) over a 134 MB activation (0.2 ms). Input 67 MB.

def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
