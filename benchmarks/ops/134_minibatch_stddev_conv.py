import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """StyleGAN2 discriminator epilogue: the minibatch standard deviation layer (samples split
    into groups of group_size by a reshape, the population variance over each group with
    correction=0, its square root averaged over channels and pixels, tiled back with repeat
    and concatenated as one extra channel), then a 3x3 convolution with an equalised
    learning-rate weight (scaled by 1/sqrt(fan_in) in the forward), a bias, and LeakyReLU(0.2)
    times sqrt(2). Sample s belongs to group s mod (batch / group_size)."""
    def __init__(self, channels, group_size):
        super().__init__()
        self.group_size = group_size
        self.weight = nn.Parameter(torch.randn(channels, channels + 1, 3, 3))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.gain = (9 * (channels + 1)) ** -0.5

    def forward(self, x):
        n, c, h, w = x.shape
        g = self.group_size
        y = torch.var(x.reshape(g, n // g, c, h, w), dim=0, correction=0)
        y = torch.sqrt(y + 1e-8).mean(dim=(1, 2, 3))
        y = y.reshape(-1, 1, 1, 1).repeat(g, 1, h, w)
        x = torch.cat([x, y], dim=1)
        out = F.conv2d(x, self.weight * self.gain, self.bias, padding=1)
        return F.leaky_relu(out, 0.2) * 2 ** 0.5

groups = 64
group_size = 4
channels = 512
res = 8

def get_inputs():
    return [torch.randn(groups * group_size, channels, res, res)]

def get_init_inputs():
    return [channels, group_size]
