import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Nearest-neighbour 2x upsampling of a feature map, added to a skip connection."""

    def forward(self, x, skip):
        return F.interpolate(x, scale_factor=2, mode="nearest") + skip


batch, channels, height, width = 8, 64, 128, 128


def get_inputs():
    return [torch.randn(batch, channels, height, width), torch.randn(batch, channels, 2 * height, 2 * width)]


def get_init_inputs():
    return []
