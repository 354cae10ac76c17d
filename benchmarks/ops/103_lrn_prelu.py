import torch
import torch.nn as nn


class Model(nn.Module):
    """AlexNet-era layers: local response normalisation across channels (nn.LocalResponseNorm)
    followed by a PReLU with one learned slope per channel."""
    def __init__(self, channels, size):
        super().__init__()
        self.lrn = nn.LocalResponseNorm(size, alpha=1e-4, beta=0.75, k=2.0)
        self.prelu = nn.PReLU(channels)

    def forward(self, x):
        return self.prelu(self.lrn(x))

batch = 64
channels = 96
height = 55
width = 55
size = 5

def get_inputs():
    return [torch.randn(batch, channels, height, width)]

def get_init_inputs():
    return [channels, size]
