import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """KL divergence between two row-wise distributions, batchmean reduction."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return F.kl_div(torch.log(predictions), targets, reduction="batchmean")


batch_size = 16384
dim = 4096
# eager ~ 0.85 ms: log (2 passes) + kl_div's target*(log(target)-input) (~8 passes) + sum (1)
# over 268 MB tensors (2.95 GB).

def get_inputs():
    return [
        torch.randn(batch_size, dim).softmax(dim=-1),
        torch.randn(batch_size, dim).softmax(dim=-1),
    ]


def get_init_inputs():
    return []
