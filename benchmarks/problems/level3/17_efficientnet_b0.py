import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvBN(nn.Module):
    """Convolution (no bias), BatchNorm (eps 1e-3, as the reference implementation), optional SiLU."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, groups=1, act=True):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=kernel_size // 2,
                              groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(out_channels, eps=1e-3)
        self.act = act

    def forward(self, x):
        x = self.bn(self.conv(x))
        return F.silu(x) if self.act else x


class SqueezeExcitation(nn.Module):
    """Squeeze-and-excitation: global average pool, 1x1 conv-SiLU down, 1x1 conv-sigmoid up, scale the input."""

    def __init__(self, channels, squeeze_channels):
        super().__init__()
        self.fc1 = nn.Conv2d(channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, channels, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        s = torch.sigmoid(self.fc2(F.silu(self.fc1(s))))
        return x * s


class MBConv(nn.Module):
    """Mobile inverted bottleneck: 1x1 expansion conv-BN-SiLU (skipped when the expansion is 1), depthwise kxk
    conv-BN-SiLU (carrying the stride), squeeze-excitation (squeezed to a quarter of the block's input
    channels), linear 1x1 projection conv-BN; the input is added back when the stride is 1 and the channels
    match. No stochastic depth (it would make the training-mode output random)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, expand_ratio):
        super().__init__()
        hidden = in_channels * expand_ratio
        self.use_residual = stride == 1 and in_channels == out_channels
        self.expand = ConvBN(in_channels, hidden, 1, 1) if expand_ratio != 1 else nn.Identity()
        self.depthwise = ConvBN(hidden, hidden, kernel_size, stride, groups=hidden)
        self.se = SqueezeExcitation(hidden, max(1, in_channels // 4))
        self.project = ConvBN(hidden, out_channels, 1, 1, act=False)

    def forward(self, x):
        out = self.project(self.se(self.depthwise(self.expand(x))))
        return x + out if self.use_residual else out


# (expansion, kernel, first stride, output channels, repeats) of the seven MBConv stages (Tan & Le 2019, Table 1)
EFFICIENTNET_B0_STAGES = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
                          (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]


class Model(nn.Module):
    """EfficientNet-B0 (Tan & Le 2019): a strided 3x3 conv-BN-SiLU stem (32 channels), 16 MBConv blocks with
    squeeze-excitation and SiLU (224x224 -> 7x7, 16 -> 320 channels), a 1x1 conv-BN-SiLU head to 1280 channels,
    global average pool, dropout (p = 0.0: the model runs in training mode as constructed) and a linear
    classifier. 5.3 M parameters.

    BatchNorm in training mode (batch statistics): the model is called as constructed, never `eval()`-ed.
    """

    def __init__(self, num_classes, dropout):
        super().__init__()
        layers = [ConvBN(3, 32, 3, 2)]
        in_channels = 32
        for expand, kernel, stride, channels, repeats in EFFICIENTNET_B0_STAGES:
            for i in range(repeats):
                layers.append(MBConv(in_channels, channels, kernel, stride if i == 0 else 1, expand))
                in_channels = channels
        layers.append(ConvBN(in_channels, 1280, 1, 1))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.classifier = nn.Sequential(nn.Dropout(dropout), nn.Linear(1280, num_classes))

    def forward(self, x):
        x = torch.flatten(self.avgpool(self.features(x)), 1)
        return self.classifier(x)


batch_size = 10
num_classes = 1000
dropout = 0.0
height = 224
width = 224
# eager ~ 4 ms (estimate, not yet measured): 81 convolutions, 8 GFLOP (0.39 GMAC per image), 16 memory-bound
# depthwise convs over expanded maps (up to 96 channels x 112x112: 48 MB), SiLU, BN and SE scaling passes,
# ~300 small launches. Input 6 MB, parameters 21 MB.

def get_inputs():
    return [torch.randn(batch_size, 3, height, width)]


def get_init_inputs():
    return [num_classes, dropout]
