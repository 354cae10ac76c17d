import torch
import torch.nn as nn


class Model(nn.Module):
    """Pick a column per position with gather, then scale."""

    def forward(self, x, idx):
        return torch.gather(x, 1, idx) * 0.5


rows, cols, picks = 4096, 2048, 256


def get_inputs():
    return [torch.randn(rows, cols), torch.randint(0, cols, (rows, picks))]


def get_init_inputs():
    return []
