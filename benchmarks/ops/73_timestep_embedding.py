import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Diffusion timestep embedding: sinusoidal features of each (fractional) timestep
    (cosines then sines over geometric frequencies), then Linear, SiLU, Linear."""
    def __init__(self, freq_dim, dim):
        super().__init__()
        self.freq_dim = freq_dim
        self.fc1 = nn.Linear(freq_dim, dim)
        self.fc2 = nn.Linear(dim, dim)

    def forward(self, t):
        half = self.freq_dim // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
        args = t[:, None].float() * freqs[None, :]
        emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
        return self.fc2(F.silu(self.fc1(emb)))

batch = 4096
freq_dim = 256
dim = 1152

def get_inputs():
    return [torch.rand(batch) * 1000.0]

def get_init_inputs():
    return [freq_dim, dim]
