import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean of the token vectors a boolean mask keeps, per sequence."""

    def forward(self, x, mask):
        kept = mask.to(x.dtype).unsqueeze(-1)
        return (x * kept).sum(dim=1) / kept.sum(dim=1).clamp(min=1.0)


batch, seq, dim = 64, 512, 1024


def get_inputs():
    return [torch.randn(batch, seq, dim), torch.rand(batch, seq) > 0.3]


def get_init_inputs():
    return []
