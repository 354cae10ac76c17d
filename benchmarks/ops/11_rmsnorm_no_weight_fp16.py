import torch
import torch.nn as nn


class Model(nn.Module):
    """RMS normalisation without a weight, in half precision, statistics in float32."""

    def forward(self, x):
        h = x.float()
        return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype)


rows, cols = 16384, 4096


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.float16)]


def get_init_inputs():
    return []
