import torch
import torch.nn as nn
import torch.nn.functional as F


class DenseLayer(nn.Module):
    """DenseNet-BC layer: BN-ReLU-conv1x1 to 4x the growth rate (the bottleneck), BN-ReLU-conv3x3 to the growth
    rate; its input is the concatenation of every earlier feature map of the block."""

    def __init__(self, in_channels, growth_rate, bn_size):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(in_channels)
        self.conv1 = nn.Conv2d(in_channels, bn_size * growth_rate, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, 3, padding=1, bias=False)

    def forward(self, features):
        x = torch.cat(features, 1)
        x = self.conv1(F.relu(self.norm1(x)))
        return self.conv2(F.relu(self.norm2(x)))


class Transition(nn.Module):
    """DenseNet transition: BN-ReLU-conv1x1 (compression: half the channels), 2x2 average pool."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.norm = nn.BatchNorm2d(in_channels)
        self.conv = nn.Conv2d(in_channels, out_channels, 1, bias=False)
        self.pool = nn.AvgPool2d(2, stride=2)

    def forward(self, x):
        return self.pool(self.conv(F.relu(self.norm(x))))


class Model(nn.Module):
    """One dense block of DenseNet-121 (Huang et al. 2017, DenseNet-BC: growth rate 32, bottleneck width 4x32)
    and the transition after it: each of the `num_layers` layers concatenates the block's input and every earlier
    layer's output (256 -> 448 channels), the transition halves the channels and the resolution
    (56x56 -> 28x28).

    BatchNorm in training mode (batch statistics): the model is called as constructed, never `eval()`-ed.
    """

    def __init__(self, num_layers, in_channels, growth_rate, bn_size):
        super().__init__()
        self.layers = nn.ModuleList(
            DenseLayer(in_channels + i * growth_rate, growth_rate, bn_size) for i in range(num_layers)
        )
        out_channels = in_channels + num_layers * growth_rate
        self.transition = Transition(out_channels, out_channels // 2)

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(features))
        return self.transition(torch.cat(features, 1))


batch_size = 10
num_layers = 6
in_channels = 256
growth_rate = 32
bn_size = 4
height = 56
width = 56
# eager ~ 1 ms (estimate, not yet measured): 13 convolutions, 13 GFLOP, cuDNN (TF32 by default) + seven
# concatenations re-reading the growing 32-56 MB feature stack, 13 batch-norm/ReLU passes and the pool.
# Input 32 MB, parameters 2 MB.

def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [num_layers, in_channels, growth_rate, bn_size]
