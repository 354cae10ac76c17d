import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Sliding-window maxima over a signal with padding and ceil_mode (a last partial window),
    and the average pool of the same windows without counting the padding."""
    def __init__(self, kernel, stride, padding):
        super().__init__()
        self.kernel, self.stride, self.padding = kernel, stride, padding

    def forward(self, x):
        mx = F.max_pool1d(x, self.kernel, self.stride, self.padding, ceil_mode=True)
        av = F.avg_pool1d(x, self.kernel, self.stride, self.padding, ceil_mode=True,
                          count_include_pad=False)
        return mx, av

batch = 64
channels = 32
length = 4099
kernel = 5
stride = 3
padding = 2

def get_inputs():
    return [torch.randn(batch, channels, length)]

def get_init_inputs():
    return [kernel, stride, padding]
