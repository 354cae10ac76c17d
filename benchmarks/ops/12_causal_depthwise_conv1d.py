import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Causal depthwise 1-D convolution over time (each channel its own short filter), then SiLU."""

    def __init__(self, channels: int, width: int):
        super().__init__()
        self.width = width
        self.conv = nn.Conv1d(channels, channels, width, groups=channels, bias=True)

    def forward(self, x):
        return F.silu(self.conv(F.pad(x, (self.width - 1, 0))))


batch, channels, length, width = 8, 2048, 2048, 4


def get_inputs():
    return [torch.randn(batch, channels, length)]


def get_init_inputs():
    return [channels, width]
