import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """KL divergence between two row-wise distributions, batchmean reduction."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return F.kl_div(torch.log(predictions), targets, reduction="batchmean")


batch_size = 32768
dim = 4096
# eager ~ 1.7 ms: log (2 passes) + kl_div's target*(log(target)-input) (~8 passes) + sum (1)
# over 537 MB tensors (5.9 GB).
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 1.39 ms.

def get_inputs():
    return [
        torch.randn(batch_size, dim).softmax(dim=-1),
        torch.randn(batch_size, dim).softmax(dim=-1),
    ]


def get_init_inputs():
    return []
