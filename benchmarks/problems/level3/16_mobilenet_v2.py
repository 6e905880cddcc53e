import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvBNReLU6(nn.Module):
    """Convolution (no bias), BatchNorm, ReLU6; `groups = channels` makes it depthwise."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, groups=1):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=kernel_size // 2,
                              groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        return F.relu6(self.bn(self.conv(x)))


class InvertedResidual(nn.Module):
    """MobileNet v2 inverted residual: 1x1 expansion conv-BN-ReLU6 (skipped when the expansion is 1), depthwise
    3x3 conv-BN-ReLU6 (carrying the stride), linear 1x1 projection conv-BN; the input is added back when the
    stride is 1 and the channels match."""

    def __init__(self, in_channels, out_channels, stride, expand_ratio):
        super().__init__()
        hidden = in_channels * expand_ratio
        self.use_residual = stride == 1 and in_channels == out_channels
        layers = [] if expand_ratio == 1 else [ConvBNReLU6(in_channels, hidden, 1, 1)]
        layers.append(ConvBNReLU6(hidden, hidden, 3, stride, groups=hidden))
        self.expand_dw = nn.Sequential(*layers)
        self.project = nn.Conv2d(hidden, out_channels, 1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        out = self.bn(self.project(self.expand_dw(x)))
        return x + out if self.use_residual else out


def make_divisible(v, divisor=8):
    """Round a channel count to a multiple of `divisor`, never below 90% of `v` (as the reference code does)."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


# (expansion t, output channels c, repeats n, first stride s) of the bottleneck stages (Sandler et al. 2018,
# Table 2)
MOBILENET_V2_STAGES = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                       (6, 160, 3, 2), (6, 320, 1, 1)]


class Model(nn.Module):
    """MobileNet v2 (Sandler et al. 2018, width multiplier 1): a strided 3x3 conv-BN-ReLU6 stem, 17 inverted
    residual blocks (32 -> 320 channels, 224x224 -> 7x7), a 1x1 conv-BN-ReLU6 to 1280 channels, global average
    pool, dropout (p = 0.0: the model runs in training mode as constructed) and a linear classifier.
    3.5 M parameters.

    BatchNorm in training mode (batch statistics): the model is called as constructed, never `eval()`-ed.
    """

    def __init__(self, num_classes, width_mult, dropout):
        super().__init__()
        in_channels = make_divisible(32 * width_mult)
        last_channels = make_divisible(1280 * max(1.0, width_mult))
        layers = [ConvBNReLU6(3, in_channels, 3, 2)]
        for t, c, n, s in MOBILENET_V2_STAGES:
            out_channels = make_divisible(c * width_mult)
            for i in range(n):
                layers.append(InvertedResidual(in_channels, out_channels, s if i == 0 else 1, t))
                in_channels = out_channels
        layers.append(ConvBNReLU6(in_channels, last_channels, 1, 1))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.classifier = nn.Sequential(nn.Dropout(dropout), nn.Linear(last_channels, num_classes))

    def forward(self, x):
        x = torch.flatten(self.avgpool(self.features(x)), 1)
        return self.classifier(x)


batch_size = 10
num_classes = 1000
width_mult = 1.0
dropout = 0.0
height = 224
width = 224
# eager ~ 2.5 ms (estimate, not yet measured): 52 convolutions, 6 GFLOP (0.3 GMAC per image), 17 memory-bound
# depthwise convs over expanded maps (up to 96 channels x 112x112: 48 MB) + 52 batch-norm passes, many small
# launches. Input 6 MB, parameters 14 MB.

def get_inputs():
    return [torch.randn(batch_size, 3, height, width)]


def get_init_inputs():
    return [num_classes, width_mult, dropout]
