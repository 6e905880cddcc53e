import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """LayerNorm over the last dimension, with non-trivial affine parameters."""

    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)
        with torch.no_grad():
            self.ln.weight.normal_(1.0, 0.1)
            self.ln.bias.normal_(0.0, 0.1)

    def forward(self, x):
        return self.ln(x)


batch_size = 64
seq_len = 4096
features = 1024
# eager ~ 0.61 ms: native_layer_norm reads and writes a 1.07 GB tensor once (2.1 GB).
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 0.78 ms.

def get_inputs():
    return [torch.randn(batch_size, seq_len, features)]


def get_init_inputs():
    return [features]
