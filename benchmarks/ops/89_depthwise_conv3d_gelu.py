import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A video block's depthwise 3x3x3 convolution (one filter per channel), then GELU."""
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv3d(channels, channels, 3, padding=1, groups=channels)

    def forward(self, x):
        return F.gelu(self.conv(x))

batch = 4
channels = 96
frames = 8
size = 56

def get_inputs():
    return [torch.randn(batch, channels, frames, size, size)]

def get_init_inputs():
    return [channels]
