import torch
import torch.nn as nn


class Model(nn.Module):
    """MobileNetV2 inverted residual: expand 1x1, depthwise 3x3, project 1x1, residual."""
    def __init__(self, channels, expand):
        super().__init__()
        hidden = channels * expand
        self.expand = nn.Conv2d(channels, hidden, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(hidden)
        self.dw = nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden, bias=False)
        self.bn2 = nn.BatchNorm2d(hidden)
        self.project = nn.Conv2d(hidden, channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(channels)

    def forward(self, x):
        h = torch.clamp(self.bn1(self.expand(x)), 0.0, 6.0)
        h = torch.clamp(self.bn2(self.dw(h)), 0.0, 6.0)
        return x + self.bn3(self.project(h))

batch_size = 32
channels = 32
expand = 6
size = 56

def get_inputs():
    return [torch.randn(batch_size, channels, size, size)]

def get_init_inputs():
    return [channels, expand]
