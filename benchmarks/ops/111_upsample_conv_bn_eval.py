import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A decoder step at inference: nearest-exact upsampling by two, a 3x3 convolution, batch
    normalisation with running statistics (training=False) and SiLU."""
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.weight = nn.Parameter(torch.rand(cout) + 0.5)
        self.bias = nn.Parameter(torch.randn(cout) * 0.1)
        self.register_buffer("mean", torch.randn(cout) * 0.1)
        self.register_buffer("var", torch.rand(cout) + 0.5)

    def forward(self, x):
        x = F.interpolate(x, scale_factor=2, mode="nearest-exact")
        x = F.batch_norm(self.conv(x), self.mean, self.var, self.weight, self.bias, training=False, eps=1e-5)
        return F.silu(x)

batch = 16
cin = 64
cout = 64
size = 64

def get_inputs():
    return [torch.randn(batch, cin, size, size)]

def get_init_inputs():
    return [cin, cout]
