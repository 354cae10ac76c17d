import torch
import torch.nn as nn


class Model(nn.Module):
    """Magnitude of the real FFT of each row."""

    def forward(self, x):
        return torch.fft.rfft(x, dim=-1).abs()


rows, length = 1024, 1024


def get_inputs():
    return [torch.randn(rows, length)]


def get_init_inputs():
    return []
