import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """3-D max pooling with padding and dilation over a 4 GiB input."""

    def __init__(self, kernel_size, stride, padding, dilation):
        super().__init__()
        self.pool = nn.MaxPool3d(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation)

    def forward(self, x):
        return self.pool(x)


batch_size = 16
channels = 32
dim1 = 128
dim2 = 128
dim3 = 128  # 16 x 32 x 128^3 fp32 = 4 GiB; output 16 x 32 x 62^3
kernel_size = 3
stride = 2
padding = 1
dilation = 3
# eager ~ 2 ms (estimate, not measured): one read of 4.3 GB, a 0.5 GB write.

def get_inputs():
    return [torch.randn(batch_size, channels, dim1, dim2, dim3)]


def get_init_inputs():
    return [kernel_size, stride, padding, dilation]
