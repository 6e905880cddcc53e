import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ConvTranspose3d (2x upsampling), 2x2x2 max pooling, then ReLU."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding,
                 pool_kernel_size):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=stride,
                                                 padding=padding, output_padding=output_padding)
        self.pool = nn.MaxPool3d(pool_kernel_size)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = self.pool(x)
        return F.relu(x)


batch_size = 16
in_channels = 32
out_channels = 32
depth = 16
height = 32
width = 32  # output 16 x 32 x 32 x 64 x 64 (268 MB), pooled to 16 x 32 x 16 x 32 x 32 (34 MB)
kernel_size = 3
stride = 2
padding = 1
output_padding = 1
pool_kernel_size = 2
# eager ~ 1.7 ms: transposed 3-D conv 14.5 GFLOP (1.45 ms at ~10 TFLOP/s) + max pool (reads the 268 MB
# activation once, 0.1 ms) and relu over 34 MB. Input 34 MB.
# measured eager on one H100 (fp32, TF32 off, torch 2.11): 2.89 ms (the transposed conv alone 2.71 ms,
# ~5.3 TFLOP/s).

def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, output_padding, pool_kernel_size]
