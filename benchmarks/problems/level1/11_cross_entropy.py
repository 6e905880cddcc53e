import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Mean cross-entropy loss of logits against integer class targets."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return F.cross_entropy(predictions, targets)


batch_size = 32768
num_classes = 4096
# eager ~ 0.46 ms: log_softmax (~3 passes over 537 MB) + nll_loss gather (negligible).

def get_inputs():
    return [torch.randn(batch_size, num_classes), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return []
