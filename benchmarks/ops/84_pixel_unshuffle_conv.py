import torch
import torch.nn as nn


class Model(nn.Module):
    """Space-to-depth downsampling: PixelUnshuffle(2) followed by a 1x1 convolution."""
    def __init__(self, channels, out_channels):
        super().__init__()
        self.down = nn.PixelUnshuffle(2)
        self.proj = nn.Conv2d(channels * 4, out_channels, 1)

    def forward(self, x):
        return self.proj(self.down(x))

batch = 16
channels = 64
out_channels = 128
size = 128

def get_inputs():
    return [torch.randn(batch, channels, size, size)]

def get_init_inputs():
    return [channels, out_channels]
