import torch
import torch.nn as nn


class Model(nn.Module):
    """Rank-free Gaussianisation of uniform samples: erfinv of 2u - 1 scaled by sqrt(2),
    clamped, then standardised per row with logaddexp against a floor."""
    def __init__(self):
        super().__init__()

    def forward(self, u):
        z = torch.special.erfinv(2 * u.clamp(1e-6, 1 - 1e-6) - 1) * (2 ** 0.5)
        z = (z - z.mean(dim=-1, keepdim=True)) / z.std(dim=-1, keepdim=True)
        return torch.logaddexp(z, torch.full_like(z, -2.0))

rows = 4096
cols = 2048

def get_inputs():
    return [torch.rand(rows, cols)]

def get_init_inputs():
    return []
