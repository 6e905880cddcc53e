import torch
import torch.nn as nn


class Model(nn.Module):
    """ConvTranspose3d (stride 2: 2x upsampling), scaled, a 2x2x2 average pool (back to the input's size), a
    per-channel bias, scaled again."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, scale1, scale2):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=stride,
                                                 padding=padding)
        self.pool = nn.AvgPool3d(kernel_size=2)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1, 1))
        self.scale1, self.scale2 = scale1, scale2

    def forward(self, x):
        x = self.conv_transpose(x) * self.scale1
        x = self.pool(x)
        return (x + self.bias) * self.scale2


batch_size = 32
in_channels = 8
out_channels = 32
depth, height, width = 16, 32, 32
kernel_size = 3
stride = 2
padding = 1
scale1 = 0.5
scale2 = 1.5
# eager: the transposed convolution writes 32 x 32 x 31 x 63 x 63 (505 MB), which the pool averages 8 to 1.
# Input 17 MB. Not yet measured on a GPU.


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, scale1, scale2]
