import torch
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    """ResNet basic block with an identity shortcut: conv-BN-ReLU, conv-BN, add, ReLU."""

    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        with torch.no_grad():
            for bn in (self.bn1, self.bn2):
                bn.weight.normal_(1.0, 0.1)
                bn.bias.normal_(0.0, 0.1)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + x)


class Model(nn.Module):
    """A stack of ResNet basic blocks with identity shortcuts (ResNet-18's first stage), BatchNorm in training mode."""

    def __init__(self, channels, num_blocks):
        super().__init__()
        self.blocks = nn.Sequential(*[BasicBlock(channels) for _ in range(num_blocks)])

    def forward(self, x):
        return self.blocks(x)


batch_size = 32
channels = 64
height = 56
width = 56
num_blocks = 2
# eager ~ 1.5 ms (estimate, not yet measured): four convs, 29.6 GFLOP (1.2 ms at ~25 TFLOP/s: 56x56 maps
# run cuDNN IEEE fp32 below its large-map rate) + batch norms, relus, adds (~30 passes over 26 MB, 0.25 ms).
# Input 26 MB.

def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, num_blocks]
