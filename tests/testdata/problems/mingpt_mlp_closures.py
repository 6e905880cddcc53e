import functools
import math

import torch
import torch.nn as nn


class NewGELU(nn.Module):
    """minGPT's GELU (the tanh approximation, written out)."""
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Model(nn.Module):
    """The MLP half of a minGPT block, its MLP reached only through a lambda's closure (as minGPT writes it),
    plus what a float64 copy made by `deepcopy(model).to(torch.float64)` misses: a module kept in a plain Python
    list, a plain-attribute (unregistered) float tensor, a partial over a nested function, and a tensor made in
    forward with the default dtype (tests/test_float64_reference.py; the attention half is left out: its GEMMs
    only lengthen the CPU capture)."""
    def __init__(self, n_embd: int):
        super().__init__()
        self.ln_2 = nn.LayerNorm(n_embd)
        m = self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(n_embd, 4 * n_embd), c_proj=nn.Linear(4 * n_embd, n_embd),
                                          act=NewGELU(), dropout=nn.Dropout(0.0)))
        self.mlpf = lambda x: m.dropout(m.c_proj(m.act(m.c_fc(x))))
        self.side = [nn.Linear(n_embd, n_embd)]  # not registered: only this list holds it
        self.gain = torch.linspace(0.5, 1.5, n_embd)  # not a buffer: a plain attribute

        def shifted(x, shift):
            return x + shift
        self.shift = functools.partial(shifted, shift=torch.full((n_embd,), 0.25))

    def forward(self, x):
        x = x + self.mlpf(self.ln_2(x))
        C = x.size(-1)
        mix = torch.ones(C, C, device=x.device).tril()  # the default dtype: a running mean over features
        mix = mix / mix.sum(0, keepdim=True)
        return self.shift(self.side[0](x) @ mix * self.gain)


def get_inputs():
    return [torch.randn(2, 16, 32)]


def get_init_inputs():
    return [32]
