import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ConvNeXt block: depthwise 7x7 convolution, LayerNorm over channels (channels-last),
    an MLP with GELU (4x expansion), a learned per-channel layer scale, and the residual."""
    def __init__(self, dim):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.full((dim,), 0.1))

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.pwconv2(F.gelu(self.pwconv1(self.norm(y))))
        return x + (self.gamma * y).permute(0, 3, 1, 2)

batch = 32
dim = 96
size = 56

def get_inputs():
    return [torch.randn(batch, dim, size, size)]

def get_init_inputs():
    return [dim]
