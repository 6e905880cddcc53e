import torch
import does_not_exist_anywhere  # noqa: F401


class Model(torch.nn.Module):
    def forward(self, x):
        return x
