import torch
import torch.nn as nn


class Model(nn.Module):
    """Style-transfer block: InstanceNorm2d with affine parameters, then LeakyReLU(0.2)."""
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.InstanceNorm2d(channels, affine=True)
        self.act = nn.LeakyReLU(0.2)

    def forward(self, x):
        return self.act(self.norm(x))

batch = 16
channels = 128
size = 64

def get_inputs():
    return [torch.randn(batch, channels, size, size)]

def get_init_inputs():
    return [channels]
