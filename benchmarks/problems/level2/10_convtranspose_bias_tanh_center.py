import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ConvTranspose2d (2x upsampling), bias add, scaled tanh, then subtract the spatial mean."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, scale):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size,
                                                 stride=stride, padding=padding)
        self.bias = nn.Parameter(0.1 * torch.randn(out_channels, 1, 1))
        self.scale = scale

    def forward(self, x):
        x = self.conv_transpose(x)
        x = x + self.bias
        x = torch.tanh(x) * self.scale
        return x - x.mean(dim=(2, 3), keepdim=True)


batch_size = 128
in_channels = 64
out_channels = 32
height = 64
width = 64
kernel_size = 4
stride = 2
padding = 1
scale = 1.5
# eager ~ 1.6 ms: transposed conv 34 GFLOP (0.76 ms) + bias, tanh, scale, mean, sub
# (~11 passes over a 268 MB activation, 0.84 ms).
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 4.02 ms.

def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, scale]
