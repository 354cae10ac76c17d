import torch
import torch.nn as nn


class Model(nn.Module):
    """Running product along each row of values near one."""

    def forward(self, x):
        return torch.cumprod(x, dim=1)


rows, length = 2048, 1024


def get_inputs():
    return [1.0 + 0.01 * torch.randn(rows, length)]


def get_init_inputs():
    return []
