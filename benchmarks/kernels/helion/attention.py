"""Helion kernel file: softmax(Q K^T / sqrt(d)) V with an online softmax (Helion's `attention` tutorial's form),
fp32, batch x heads 32, sequence 1024, head dim 64. `tl.dot` of fp32 tiles runs TF32: judged under `tf32`."""
import math

import helion
import helion.language as hl
import torch

BH, SEQ, DIM = 32, 1024, 64


@helion.kernel()
def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    bh, m, d = q.size()
    n = k.size(1)
    d = hl.specialize(d)
    scale = 1.0 / math.sqrt(d)
    out = torch.empty_like(q)
    for tile_b, tile_m in hl.tile([bh, m]):
        m_i = hl.full([tile_b, tile_m], float("-inf"), dtype=torch.float32)
        l_i = hl.zeros([tile_b, tile_m], dtype=torch.float32)
        acc = hl.zeros([tile_b, tile_m, d], dtype=torch.float32)
        qs = q[tile_b, tile_m, :]
        for tile_n in hl.tile(n):
            ks = k[tile_b, tile_n, :]
            scores = torch.bmm(qs, ks.transpose(1, 2)) * scale
            m_new = torch.maximum(m_i, torch.amax(scores, dim=-1))
            p = torch.exp(scores - m_new[:, :, None])
            alpha = torch.exp(m_i - m_new)
            l_i = l_i * alpha + torch.sum(p, dim=-1)
            acc = acc * alpha[:, :, None] + torch.bmm(p, v[tile_b, tile_n, :])
            m_i = m_new
        out[tile_b, tile_m, :] = acc / l_i[:, :, None]
    return out


def launch(q, k, v):
    return attention(q, k, v)


def reference(q, k, v):
    return torch.softmax(q @ k.transpose(1, 2) / math.sqrt(q.shape[-1]), dim=-1) @ v


def get_inputs():
    return [torch.randn(BH, SEQ, DIM), torch.randn(BH, SEQ, DIM), torch.randn(BH, SEQ, DIM)]
