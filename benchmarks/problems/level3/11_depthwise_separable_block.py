import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """MobileNet depthwise-separable block: depthwise 3x3 conv-BN-ReLU6, then pointwise 1x1 conv-BN-ReLU6
    (BatchNorm in training mode)."""

    def __init__(self, in_channels, out_channels, stride):
        super().__init__()
        self.depthwise = nn.Conv2d(in_channels, in_channels, 3, stride=stride, padding=1, groups=in_channels,
                                   bias=False)
        self.bn1 = nn.BatchNorm2d(in_channels)
        self.pointwise = nn.Conv2d(in_channels, out_channels, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        with torch.no_grad():
            for bn in (self.bn1, self.bn2):
                bn.weight.normal_(1.0, 0.1)
                bn.bias.normal_(0.0, 0.1)

    def forward(self, x):
        x = F.relu6(self.bn1(self.depthwise(x)))
        return F.relu6(self.bn2(self.pointwise(x)))


batch_size = 64
in_channels = 128
out_channels = 256
height = 56
width = 56
stride = 1
# eager ~ 1.1 ms (estimate, not yet measured): depthwise conv 0.46 GFLOP, memory-bound (reads and writes
# 103 MB, ~0.15 ms) + pointwise conv 13.2 GFLOP (0.45 ms at ~30 TFLOP/s) + batch norms and relu6s
# (~5 passes over 103 MB and 5 over 206 MB, 0.5 ms). Input 103 MB.

def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, stride]
