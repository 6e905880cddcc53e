import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Mean cross-entropy loss of logits against integer class targets."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return F.cross_entropy(predictions, targets)


batch_size = 65536
num_classes = 4096
# eager ~ 0.9 ms: log_softmax (~3 passes over 1.07 GB) + nll_loss gather (negligible).
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 0.82 ms.

def get_inputs():
    return [torch.randn(batch_size, num_classes), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return []
