import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Linear layer, LayerNorm, then a residual add of a second input."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.ln = nn.LayerNorm(out_features)
        with torch.no_grad():
            self.ln.weight.normal_(1.0, 0.1)
            self.ln.bias.normal_(0.0, 0.1)

    def forward(self, x, residual):
        return self.ln(self.linear(x)) + residual


batch_size = 8192
in_features = 2048
out_features = 2048
# eager ~ 1.6 ms: addmm 68.7 GFLOP (1.5 ms) + layer norm (2 passes) + add (3 passes) over 67 MB (0.1 ms).
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 1.47 ms.

def get_inputs():
    return [torch.randn(batch_size, in_features), torch.randn(batch_size, out_features)]


def get_init_inputs():
    return [in_features, out_features]
