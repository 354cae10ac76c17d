import torch
import torch.nn as nn


class Model(nn.Module):
    """Accumulate rows into a table at given indices (index_put with accumulate)."""

    def forward(self, table, idx, rows):
        return table.index_put((idx,), rows, accumulate=True)


size, dim, n = 4096, 256, 16384


def get_inputs():
    return [torch.zeros(size, dim), torch.randint(0, size, (n,)), torch.randn(n, dim)]


def get_init_inputs():
    return []
