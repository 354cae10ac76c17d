import torch
import torch.nn as nn


class Model(nn.Module):
    """ShuffleNet unit (stride 1): grouped 1x1 convolution, BatchNorm, ReLU, channel shuffle,
    depthwise 3x3 convolution, BatchNorm, grouped 1x1 convolution, BatchNorm, the residual,
    ReLU (BatchNorm in training mode)."""
    def __init__(self, channels, groups):
        super().__init__()
        mid = channels // 4
        self.groups = groups
        self.conv1 = nn.Conv2d(channels, mid, 1, groups=groups, bias=False)
        self.bn1 = nn.BatchNorm2d(mid)
        self.conv2 = nn.Conv2d(mid, mid, 3, padding=1, groups=mid, bias=False)
        self.bn2 = nn.BatchNorm2d(mid)
        self.conv3 = nn.Conv2d(mid, channels, 1, groups=groups, bias=False)
        self.bn3 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        b, c, h, w = y.shape
        y = y.view(b, self.groups, c // self.groups, h, w).transpose(1, 2).reshape(b, c, h, w)
        y = self.bn3(self.conv3(self.bn2(self.conv2(y))))
        return torch.relu(x + y)

batch = 32
channels = 240
groups = 3
size = 28

def get_inputs():
    return [torch.randn(batch, channels, size, size)]

def get_init_inputs():
    return [channels, groups]
