import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Reflect-pad a signal and take a 5-tap moving average."""

    def forward(self, x):
        p = F.pad(x, (2, 2), mode="reflect")
        return (p[..., :-4] + p[..., 1:-3] + p[..., 2:-2] + p[..., 3:-1] + p[..., 4:]) / 5


batch, channels, length = 16, 64, 8192


def get_inputs():
    return [torch.randn(batch, channels, length)]


def get_init_inputs():
    return []
