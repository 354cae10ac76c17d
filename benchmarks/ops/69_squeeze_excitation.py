import torch
import torch.nn as nn


class Model(nn.Module):
    """Squeeze-and-excitation: per-channel means, a bottleneck MLP (ReLU, sigmoid), and the
    input scaled channel by channel by its result."""
    def __init__(self, channels, reduction):
        super().__init__()
        self.fc1 = nn.Linear(channels, channels // reduction)
        self.fc2 = nn.Linear(channels // reduction, channels)

    def forward(self, x):
        s = x.mean(dim=(2, 3))
        s = torch.sigmoid(self.fc2(torch.relu(self.fc1(s))))
        return x * s[:, :, None, None]

batch = 64
channels = 256
reduction = 16
size = 28

def get_inputs():
    return [torch.randn(batch, channels, size, size)]

def get_init_inputs():
    return [channels, reduction]
