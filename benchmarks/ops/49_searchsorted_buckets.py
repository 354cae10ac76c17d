import torch
import torch.nn as nn


class Model(nn.Module):
    """Bucket index of each value among sorted boundaries (searchsorted)."""

    def forward(self, bounds, x):
        return torch.searchsorted(bounds, x, right=True)


n, edges = 1 << 20, 1024


def get_inputs():
    return [torch.sort(torch.randn(edges)).values, torch.randn(n)]


def get_init_inputs():
    return []
