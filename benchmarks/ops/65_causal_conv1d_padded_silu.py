import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Mamba-style causal depthwise conv1d followed by SiLU."""
    def __init__(self, channels, width):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, width, groups=channels, padding=width - 1)

    def forward(self, x):
        t = x.shape[-1]
        return F.silu(self.conv(x)[..., :t])

batch_size = 8
channels = 1536
width = 4
seq = 2048

def get_inputs():
    return [torch.randn(batch_size, channels, seq)]

def get_init_inputs():
    return [channels, width]
