import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvBN(nn.Module):
    """Convolution (no bias), BatchNorm, ReLU; `groups = channels` makes it depthwise."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, groups=1):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=kernel_size // 2,
                              groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class DepthwiseSeparable(nn.Module):
    """Depthwise 3x3 conv-BN-ReLU (carrying the stride), then pointwise 1x1 conv-BN-ReLU."""

    def __init__(self, in_channels, out_channels, stride):
        super().__init__()
        self.depthwise = ConvBN(in_channels, in_channels, 3, stride, groups=in_channels)
        self.pointwise = ConvBN(in_channels, out_channels, 1, 1)

    def forward(self, x):
        return self.pointwise(self.depthwise(x))


# (output channels, stride) of the 13 depthwise-separable layers (Howard et al. 2017, Table 1)
MOBILENET_V1_LAYERS = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
                       (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1)]


class Model(nn.Module):
    """MobileNet v1 (Howard et al. 2017, width multiplier alpha): a strided 3x3 conv-BN-ReLU stem and 13
    depthwise-separable layers (224x224 -> 7x7, 32 -> 1024 channels at alpha = 1), global average pool, linear
    classifier. 4.2 M parameters at alpha = 1.

    BatchNorm in training mode (batch statistics): the model is called as constructed, never `eval()`-ed.
    """

    def __init__(self, num_classes, alpha):
        super().__init__()

        def width(c):
            return int(c * alpha)

        layers = [ConvBN(3, width(32), 3, 2)]
        in_channels = width(32)
        for channels, stride in MOBILENET_V1_LAYERS:
            layers.append(DepthwiseSeparable(in_channels, width(channels), stride))
            in_channels = width(channels)
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(in_channels, num_classes)

    def forward(self, x):
        x = torch.flatten(self.avgpool(self.features(x)), 1)
        return self.fc(x)


batch_size = 10
num_classes = 1000
alpha = 1.0
height = 224
width = 224
# eager ~ 1.5 ms (estimate, not yet measured): 27 convolutions, 11 GFLOP (0.57 GMAC per image, 95% in the
# pointwise 1x1s), 13 memory-bound depthwise convs + 27 batch-norm/ReLU passes over 0.5-16 MB maps, many
# small launches. Input 6 MB, parameters 17 MB.

def get_inputs():
    return [torch.randn(batch_size, 3, height, width)]


def get_init_inputs():
    return [num_classes, alpha]
