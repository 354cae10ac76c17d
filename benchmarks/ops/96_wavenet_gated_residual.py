import torch
import torch.nn as nn


class Model(nn.Module):
    """A WaveNet residual block: a dilated causal Conv1d (left padding only) producing a filter
    and a gate half, tanh(filter) * sigmoid(gate), then two 1x1 convolutions giving the residual
    output (added to the input) and the skip output; both returned."""
    def __init__(self, channels, dilation):
        super().__init__()
        self.dilation = dilation
        self.dilated = nn.Conv1d(channels, 2 * channels, kernel_size=2, dilation=dilation)
        self.res = nn.Conv1d(channels, channels, 1)
        self.skip = nn.Conv1d(channels, channels, 1)

    def forward(self, x):
        h = self.dilated(torch.nn.functional.pad(x, (self.dilation, 0)))
        f, g = h.chunk(2, dim=1)
        z = torch.tanh(f) * torch.sigmoid(g)
        return x + self.res(z), self.skip(z)

batch = 16
channels = 128
length = 16000
dilation = 8

def get_inputs():
    return [torch.randn(batch, channels, length)]

def get_init_inputs():
    return [channels, dilation]
