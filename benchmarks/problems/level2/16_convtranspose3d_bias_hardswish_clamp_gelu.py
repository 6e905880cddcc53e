import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ConvTranspose3d (2x upsampling), then an element-wise chain: bias add, HardSwish, clamp, GELU."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding,
                 clamp_min, clamp_max):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=stride,
                                                 padding=padding, output_padding=output_padding)
        self.bias = nn.Parameter(0.1 * torch.randn(out_channels, 1, 1, 1))
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        x = self.conv_transpose(x)
        x = x + self.bias
        x = F.hardswish(x)
        x = torch.clamp(x, min=self.clamp_min, max=self.clamp_max)
        return F.gelu(x)


batch_size = 16
in_channels = 32
out_channels = 16
depth = 16
height = 32
width = 32  # output 16 x 16 x 32 x 64 x 64 (134 MB)
kernel_size = 3
stride = 2
padding = 1
output_padding = 1
clamp_min = -0.25
clamp_max = 1.0
# eager ~ 1.1 ms (estimate, not yet measured): transposed 3-D conv 7.2 GFLOP (0.7 ms at ~10 TFLOP/s)
# + four element-wise ops (8 passes over 134 MB, 0.35 ms). Input 34 MB.

def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, output_padding, clamp_min, clamp_max]
