import torch
import torch.nn as nn
import torch.nn.functional as F


def window_partition(x, window_size):
    """(B, H, W, C) -> (B * H/ws * W/ws, ws * ws, C): the non-overlapping windows, row-major."""
    B, H, W, C = x.shape
    x = x.view(B, H // window_size, window_size, W // window_size, window_size, C)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, window_size * window_size, C)


def window_reverse(windows, window_size, H, W):
    """The inverse of window_partition: (B * nW, ws * ws, C) -> (B, H, W, C)."""
    C = windows.shape[-1]
    B = windows.shape[0] // ((H // window_size) * (W // window_size))
    x = windows.view(B, H // window_size, W // window_size, window_size, window_size, C)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(B, H, W, C)


class WindowAttention(nn.Module):
    """Multi-head self-attention inside each window, with a learned relative position bias: a table of
    (2ws-1)^2 entries per head, gathered by a fixed (ws^2, ws^2) index buffer; an additive mask (0 or -100)
    keeps shifted windows' tokens from attending across the wrapped-around border."""

    def __init__(self, dim, window_size, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.relative_position_bias_table = nn.Parameter(torch.zeros((2 * window_size - 1) ** 2, num_heads))
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)
        coords = torch.stack(torch.meshgrid(torch.arange(window_size), torch.arange(window_size), indexing="ij"))
        coords = coords.flatten(1)  # (2, ws^2)
        relative = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (window_size - 1)  # (ws^2, ws^2, 2)
        index = relative[:, :, 0] * (2 * window_size - 1) + relative[:, :, 1]
        self.register_buffer("relative_position_index", index)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, mask):
        B_, N, C = x.shape
        qkv = self.qkv(x).reshape(B_, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * self.scale) @ k.transpose(-2, -1)
        bias = self.relative_position_bias_table[self.relative_position_index.view(-1)]
        attn = attn + bias.view(N, N, -1).permute(2, 0, 1).unsqueeze(0)
        if mask is not None:
            nW = mask.shape[0]
            attn = attn.view(B_ // nW, nW, self.num_heads, N, N) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, self.num_heads, N, N)
        attn = F.softmax(attn, dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B_, N, C)
        return self.proj(x)


class Model(nn.Module):
    """One Swin Transformer block (Liu et al. 2021) with shifted windows: LayerNorm, cyclic shift of the
    H x W token map by -shift, window attention with relative position bias and the shifted-window mask, shift
    back, residual add; LayerNorm, MLP (4x, GELU), residual add. Tokens in and out: (B, H*W, C).

    No dropout or stochastic depth (the model is called as constructed, in training mode).
    """

    def __init__(self, dim, height, width, num_heads, window_size, shift_size, mlp_ratio):
        super().__init__()
        assert height % window_size == 0 and width % window_size == 0 and 0 <= shift_size < window_size
        self.height, self.width = height, width
        self.window_size, self.shift_size = window_size, shift_size
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, window_size, num_heads)
        self.norm2 = nn.LayerNorm(dim)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))
        attn_mask = None
        if shift_size > 0:
            # label the regions the shifted map's windows mix (3 x 3 after the roll); tokens of unlike labels
            # in one window must not attend to each other
            img_mask = torch.zeros(1, height, width, 1)
            spans = (slice(0, -window_size), slice(-window_size, -shift_size), slice(-shift_size, None))
            label = 0
            for h in spans:
                for w in spans:
                    img_mask[:, h, w, :] = label
                    label += 1
            mask_windows = window_partition(img_mask, window_size).squeeze(-1)  # (nW, ws^2)
            attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
            attn_mask = attn_mask.masked_fill(attn_mask != 0, -100.0).masked_fill(attn_mask == 0, 0.0)
        self.register_buffer("attn_mask", attn_mask)

    def forward(self, x):
        H, W, ws, s = self.height, self.width, self.window_size, self.shift_size
        B, _, C = x.shape
        shortcut = x
        x = self.norm1(x).view(B, H, W, C)
        if s > 0:
            x = torch.roll(x, shifts=(-s, -s), dims=(1, 2))
        x = window_reverse(self.attn(window_partition(x, ws), self.attn_mask), ws, H, W)
        if s > 0:
            x = torch.roll(x, shifts=(s, s), dims=(1, 2))
        x = shortcut + x.reshape(B, H * W, C)
        return x + self.mlp(self.norm2(x))


batch_size = 10
height = 56
width = 56
dim = 96
num_heads = 3
window_size = 7
shift_size = 3
mlp_ratio = 4.0
# eager ~ 0.6 ms (estimate, not yet measured): four GEMMs over 31360 tokens, 8.7 GFLOP, + 640 windows x 3 heads
# of 49x49 attention (batched matmuls 0.9 GFLOP), bias gather, mask add, softmax, two rolls and the window
# permutes (~25 passes over the 12 MB token map, 4 over the 48 MB MLP activation). Input 12 MB.

def get_inputs():
    return [torch.randn(batch_size, height * width, dim)]


def get_init_inputs():
    return [dim, height, width, num_heads, window_size, shift_size, mlp_ratio]
