import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """SE-ResNet basic block: two conv-BN stages, squeeze-and-excitation channel gating, residual add, ReLU."""

    def __init__(self, channels, reduction):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.fc1 = nn.Linear(channels, channels // reduction)
        self.fc2 = nn.Linear(channels // reduction, channels)
        with torch.no_grad():
            for bn in (self.bn1, self.bn2):
                bn.weight.normal_(1.0, 0.1)
                bn.bias.normal_(0.0, 0.1)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        s = F.adaptive_avg_pool2d(out, 1).flatten(1)
        s = torch.sigmoid(self.fc2(F.relu(self.fc1(s))))
        out = out * s.view(s.shape[0], s.shape[1], 1, 1)
        return F.relu(out + x)


batch_size = 32
channels = 128
height = 56
width = 56
reduction = 16
# eager ~ 1.6 ms: two convs, 59 GFLOP (1.3 ms) + batch norms, relus, pooling, gating, add
# (~17 passes over 51 MB, 0.25 ms).
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 1.72 ms.

def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, reduction]
