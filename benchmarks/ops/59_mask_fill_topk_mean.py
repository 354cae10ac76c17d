import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean of the 16 largest values of each row after masking negatives to zero."""

    def forward(self, x):
        return torch.topk(x.clamp(min=0), 16, dim=-1).values.mean(-1)


rows, length = 8192, 512


def get_inputs():
    return [torch.randn(rows, length)]


def get_init_inputs():
    return []
