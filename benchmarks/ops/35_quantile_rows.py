import torch
import torch.nn as nn


class Model(nn.Module):
    """The 0.9 quantile of each row (linear interpolation)."""

    def forward(self, x):
        return torch.quantile(x, 0.9, dim=-1)


rows, length = 4096, 1024


def get_inputs():
    return [torch.randn(rows, length)]


def get_init_inputs():
    return []
