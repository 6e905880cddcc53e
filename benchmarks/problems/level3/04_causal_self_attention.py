import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Multi-head causal self-attention written with matmuls, a mask buffer and softmax (minGPT style)."""

    def __init__(self, n_embd, n_head, max_seqlen):
        super().__init__()
        assert n_embd % n_head == 0
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.register_buffer(
            "bias", torch.tril(torch.ones(max_seqlen, max_seqlen)).view(1, 1, max_seqlen, max_seqlen)
        )
        self.n_head = n_head
        self.n_embd = n_embd

    def forward(self, x):
        B, T, C = x.size()
        hd = C // self.n_head
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q = q.view(B, T, self.n_head, hd).transpose(1, 2)
        k = k.view(B, T, self.n_head, hd).transpose(1, 2)
        v = v.view(B, T, self.n_head, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


batch_size = 8
seq_len = 1024
n_embd = 768
n_head = 12
# eager ~ 2.6 ms: projections + two batched matmuls, 64.5 GFLOP (1.45 ms) + scale, mask, softmax
# over the 403 MB attention matrix (~10 passes, 1.15 ms).
# measured eager on one H200 (fp32, TF32 off, torch 2.11): 2.58 ms.

def get_inputs():
    return [torch.randn(batch_size, seq_len, n_embd)]


def get_init_inputs():
    return [n_embd, n_head, seq_len]
