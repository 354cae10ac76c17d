import torch
import torch.nn as nn


class Model(nn.Module):
    """LLaMA-style rotary embedding: query pairs viewed as complex numbers and multiplied by
    unit phasors built from the positions with torch.polar."""
    def __init__(self, head_dim, theta):
        super().__init__()
        freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
        self.register_buffer("freqs", freqs)

    def forward(self, q):
        seq = q.shape[1]
        t = torch.arange(seq, device=q.device, dtype=torch.float32)
        angles = torch.outer(t, self.freqs)
        phasors = torch.polar(torch.ones_like(angles), angles)
        qc = torch.view_as_complex(q.float().reshape(*q.shape[:-1], -1, 2))
        out = torch.view_as_real(qc * phasors[None, :, None, :]).flatten(3)
        return out.type_as(q)

batch = 4
seq = 2048
heads = 32
head_dim = 128
theta = 10000.0

def get_inputs():
    return [torch.randn(batch, seq, heads, head_dim)]

def get_init_inputs():
    return [head_dim, theta]
