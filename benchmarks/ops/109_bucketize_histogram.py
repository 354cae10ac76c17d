import torch
import torch.nn as nn


class Model(nn.Module):
    """Per-row histograms against fixed bucket boundaries: torch.bucketize of every value, then
    the counts per bucket by scatter_add of ones, normalised to frequencies."""
    def __init__(self, buckets):
        super().__init__()
        self.register_buffer("edges", torch.linspace(-3, 3, buckets - 1))

    def forward(self, x):
        idx = torch.bucketize(x, self.edges)
        counts = torch.zeros(x.shape[0], self.edges.numel() + 1, device=x.device)
        counts.scatter_add_(1, idx, torch.ones_like(x))
        return counts / x.shape[1]

rows = 4096
cols = 4096
buckets = 64

def get_inputs():
    return [torch.randn(rows, cols)]

def get_init_inputs():
    return [buckets]
