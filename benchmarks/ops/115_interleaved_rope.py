import torch
import torch.nn as nn


class Model(nn.Module):
    """GPT-J style rotary embedding on interleaved pairs (even and odd lanes of the head
    dimension), with the angle table computed from positions in the forward."""
    def __init__(self, head_dim, base):
        super().__init__()
        self.head_dim = head_dim
        self.base = base

    def forward(self, x, positions):
        half = self.head_dim // 2
        inv = self.base ** (-torch.arange(0, half, device=x.device, dtype=torch.float32) / half)
        ang = positions.to(torch.float32)[:, None] * inv[None, :]
        cos, sin = ang.cos()[None, :, None, :], ang.sin()[None, :, None, :]
        x1, x2 = x[..., 0::2], x[..., 1::2]
        out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
        return out.flatten(-2)

batch = 4
seq = 1024
heads = 16
head_dim = 128
base = 10000.0

def get_inputs():
    return [torch.randn(batch, seq, heads, head_dim), torch.arange(seq) + 7]

def get_init_inputs():
    return [head_dim, base]
