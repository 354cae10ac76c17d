import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """U-Net decoder step: nearest 2x upsampling, concatenation with the encoder's skip
    features, a 3x3 convolution, BatchNorm (training mode: batch statistics) and ReLU."""
    def __init__(self, in_channels, skip_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels + skip_channels, out_channels, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x, skip):
        x = F.interpolate(x, scale_factor=2, mode="nearest")
        return torch.relu(self.bn(self.conv(torch.cat([x, skip], dim=1))))

batch = 16
in_channels = 128
skip_channels = 64
out_channels = 64
size = 32

def get_inputs():
    return [torch.randn(batch, in_channels, size, size), torch.randn(batch, skip_channels, 2 * size, 2 * size)]

def get_init_inputs():
    return [in_channels, skip_channels, out_channels]
