import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Linear, Dropout(p=0), mean over groups of features, then softmax over the groups."""

    def __init__(self, in_features, out_features, num_groups, dropout_p):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(dropout_p)
        self.num_groups = num_groups

    def forward(self, x):
        x = self.linear(x)
        x = self.dropout(x)
        x = x.view(x.shape[0], self.num_groups, -1).mean(dim=-1)
        return torch.softmax(x, dim=1)


batch_size = 16384
in_features = 1024
out_features = 4096
num_groups = 64
dropout_p = 0.0
# eager ~ 3.1 ms: addmm 137 GFLOP (3.05 ms) + grouped mean (1 read of 268 MB, 0.08 ms) + tiny softmax.
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 3.01 ms.

def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, num_groups, dropout_p]
