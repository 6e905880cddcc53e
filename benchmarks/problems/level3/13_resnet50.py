import torch
import torch.nn as nn
import torch.nn.functional as F


class Bottleneck(nn.Module):
    """ResNet bottleneck block (v1.5: the stride on the 3x3 conv): conv1x1-BN-ReLU, conv3x3-BN-ReLU,
    conv1x1-BN (4x the width), plus the shortcut (a strided 1x1 conv-BN where the shape changes), ReLU."""

    expansion = 4

    def __init__(self, in_channels, width, stride):
        super().__init__()
        out_channels = width * self.expansion
        self.conv1 = nn.Conv2d(in_channels, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out_channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.downsample = None
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(out_channels))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + identity)


class Model(nn.Module):
    """ResNet-50 (He et al. 2015, the torchvision v1.5 layout): 7x7 stem, max pool, four stages of 3, 4, 6, 3
    bottleneck blocks (256, 512, 1024, 2048 output channels), global average pool, linear classifier.
    25.6 M parameters.

    BatchNorm in training mode (batch statistics): the model is called as constructed, never `eval()`-ed.
    """

    def __init__(self, num_classes, layers=(3, 4, 6, 3)):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        stages, in_channels = [], 64
        for i, (width, blocks) in enumerate(zip((64, 128, 256, 512), layers, strict=True)):
            stage = []
            for j in range(blocks):
                stage.append(Bottleneck(in_channels, width, 2 if (i > 0 and j == 0) else 1))
                in_channels = width * Bottleneck.expansion
            stages.append(nn.Sequential(*stage))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * Bottleneck.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


batch_size = 10
num_classes = 1000
height = 224
width = 224
# eager ~ 8 ms (estimate, not yet measured): 53 convolutions, 82 GFLOP (4.1 GMAC per image), cuDNN (TF32 by
# default) + ~110 batch-norm/ReLU/add passes over 1-128 MB maps. Input 6 MB, parameters 102 MB.

def get_inputs():
    return [torch.randn(batch_size, 3, height, width)]


def get_init_inputs():
    return [num_classes]
