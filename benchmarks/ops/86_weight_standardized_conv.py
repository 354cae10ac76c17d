import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Weight-standardised 3x3 convolution (BiT/ResNetV2): each filter is centred and scaled to
    unit variance in the forward pass, then convolved, then GroupNorm and ReLU."""
    def __init__(self, cin, cout, groups):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(cout, cin, 3, 3) * 0.1)
        self.norm = nn.GroupNorm(groups, cout)

    def forward(self, x):
        w = self.weight
        mean = w.mean(dim=(1, 2, 3), keepdim=True)
        var = w.var(dim=(1, 2, 3), keepdim=True, unbiased=False)
        w = (w - mean) / torch.sqrt(var + 1e-5)
        return torch.relu(self.norm(F.conv2d(x, w, padding=1)))

batch = 16
cin = 64
cout = 64
groups = 32
size = 56

def get_inputs():
    return [torch.randn(batch, cin, size, size)]

def get_init_inputs():
    return [cin, cout, groups]
