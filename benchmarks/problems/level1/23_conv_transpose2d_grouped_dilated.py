import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Transposed 2-D convolution: grouped, strided, padded and dilated (one cuDNN call).

    cuDNN may pick a non-deterministic algorithm for it; capture measures the
    compiled model's own run-to-run spread and verifies against it.
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride,
                                                 padding=padding, dilation=dilation, groups=groups)

    def forward(self, x):
        return self.conv_transpose(x)


batch_size = 16
in_channels = 32
out_channels = 64
height = 256
width = 256
kernel_size = 3
stride = 2
padding = 1
dilation = 2
groups = 4
# output 16 x 64 x 513 x 513 (1.08 GB); ~9.7 GFLOP.
# eager ~ 2 ms (estimate, not measured).

def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, dilation, groups]
