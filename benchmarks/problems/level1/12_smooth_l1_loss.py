import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Smooth L1 (Huber-style) loss with mean reduction."""

    def __init__(self, beta):
        super().__init__()
        self.beta = beta

    def forward(self, predictions, targets):
        return F.smooth_l1_loss(predictions, targets, beta=self.beta)


batch_size = 16384
dim = 8192
beta = 1.0
# eager ~ 0.6 ms: elementwise loss (2 reads + 1 write) + mean (1 read) over 537 MB tensors (2.1 GB).
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 0.51 ms.

def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [beta]
