import torch
import torch.nn as nn

# configuration D of Simonyan & Zisserman (2014): output channels of the 3x3 convolutions, "M" a 2x2 max pool
VGG16_LAYERS = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]


class Model(nn.Module):
    """VGG-16 (configuration D, no batch norm): thirteen 3x3 conv-ReLU layers in five stages, each closed by a
    2x2 max pool, then a 7x7 adaptive average pool and three linear layers (25088-4096-4096-classes) with ReLU
    and dropout. 138.4 M parameters.

    Dropout has p = 0.0 (the model is called as constructed, in training mode: a nonzero p would make the
    output random). Weights initialised as torchvision does (Kaiming-normal convolutions, N(0, 0.01) linears,
    zero biases): without BatchNorm, PyTorch's default initialisation shrinks the activations by ~6x in
    variance per layer.
    """

    def __init__(self, num_classes, dropout):
        super().__init__()
        layers, in_channels = [], 3
        for v in VGG16_LAYERS:
            if v == "M":
                layers.append(nn.MaxPool2d(2, stride=2))
            else:
                layers += [nn.Conv2d(in_channels, v, 3, padding=1), nn.ReLU(inplace=True)]
                in_channels = v
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(inplace=True), nn.Dropout(dropout),
            nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(dropout),
            nn.Linear(4096, num_classes),
        )
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0.0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = torch.flatten(self.avgpool(self.features(x)), 1)
        return self.classifier(x)


batch_size = 10
num_classes = 1000
dropout = 0.0
height = 224
width = 224
# eager ~ 12 ms (estimate, not yet measured): 13 convolutions, 307 GFLOP (15.4 GMAC per image), cuDNN (TF32 by
# default), + the 25088x4096 classifier GEMM (reads 411 MB of weights at batch 10). Parameters 553 MB.

def get_inputs():
    return [torch.randn(batch_size, 3, height, width)]


def get_init_inputs():
    return [num_classes, dropout]
