import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Two conv-BatchNorm-ReLU stages followed by an identity residual add."""

    def __init__(self, channels, kernel_size):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        with torch.no_grad():
            for bn in (self.bn1, self.bn2):
                bn.weight.normal_(1.0, 0.1)
                bn.bias.normal_(0.0, 0.1)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        return out + x


batch_size = 32
channels = 64
height = 128
width = 128
kernel_size = 3
# eager ~ 2.2 ms: two convs, 77 GFLOP (1.7 ms) + batch norms, relus and the add
# (~13 passes over 134 MB, 0.5 ms).
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 2.66 ms.

def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, kernel_size]
