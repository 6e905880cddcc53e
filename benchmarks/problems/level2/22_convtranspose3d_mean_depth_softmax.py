import torch
import torch.nn as nn


class Model(nn.Module):
    """ConvTranspose3d (stride 2, padding 1, output_padding 1), mean over depth, bias add, softmax over
    channels, tanh, scale."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding, scaling):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=stride,
                                                 padding=padding, output_padding=output_padding)
        self.bias = nn.Parameter(torch.randn(1, out_channels, 1, 1, 1))
        self.scaling = scaling

    def forward(self, x):
        x = self.conv_transpose(x)
        x = x.mean(dim=2, keepdim=True)
        x = x + self.bias
        x = torch.softmax(x, dim=1)
        return torch.tanh(x) * self.scaling


batch_size = 16
in_channels = 32
out_channels = 64
depth = height = width = 32
kernel_size = 3
stride = 2
padding = 1
output_padding = 1
scaling = 2.0
# eager ~ 10 ms: a stride-2 3-D transposed convolution to 64x64x64 whose depth is then averaged away.


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, output_padding, scaling]
