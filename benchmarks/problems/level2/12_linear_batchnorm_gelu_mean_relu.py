import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Linear, BatchNorm1d (training mode), GELU, mean over features, ReLU."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features)
        with torch.no_grad():
            self.bn.weight.normal_(1.0, 0.1)
            self.bn.bias.normal_(0.0, 0.1)

    def forward(self, x):
        x = self.linear(x)
        x = self.bn(x)
        x = F.gelu(x)
        x = torch.mean(x, dim=1, keepdim=True)
        return torch.relu(x)


batch_size = 16384
in_features = 1024
out_features = 2048
# eager ~ 1.8 ms: addmm 68.7 GFLOP (1.5 ms) + batch norm over the batch (3 passes), gelu (2),
# mean (1) over 134 MB (0.23 ms).
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 1.67 ms.

def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
