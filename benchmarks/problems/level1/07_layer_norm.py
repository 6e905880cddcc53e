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


batch_size = 32
seq_len = 4096
features = 1024
# eager ~ 0.31 ms: native_layer_norm reads and writes a 537 MB tensor once (1.07 GB).

def get_inputs():
    return [torch.randn(batch_size, seq_len, features)]


def get_init_inputs():
    return [features]
