import torch
import torch.nn as nn


class Model(nn.Module):
    """Per-head weighted sum over the feature dimension (einsum)."""

    def __init__(self, heads: int, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(heads, dim))

    def forward(self, x):
        return torch.einsum("bhd,hd->bh", x, self.weight)


batch, heads, dim = 8192, 32, 128


def get_inputs():
    return [torch.randn(batch, heads, dim)]


def get_init_inputs():
    return [heads, dim]
