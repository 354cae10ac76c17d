import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Diffusion U-Net block head: GroupNorm then SiLU."""
    def __init__(self, groups, channels):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels)

    def forward(self, x):
        return F.silu(self.norm(x))

batch_size = 16
channels = 320
groups = 32
size = 64

def get_inputs():
    return [torch.randn(batch_size, channels, size, size)]

def get_init_inputs():
    return [groups, channels]
