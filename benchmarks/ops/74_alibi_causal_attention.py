import torch
import torch.nn as nn


class Model(nn.Module):
    """Causal attention with ALiBi: each head adds a linear penalty, its slope a power of two
    fixed by the head's index, on the distance between query and key, before the causal
    mask and the softmax."""
    def __init__(self, heads):
        super().__init__()
        slopes = torch.tensor([2.0 ** (-8.0 * (i + 1) / heads) for i in range(heads)])
        self.register_buffer("slopes", slopes)

    def forward(self, q, k, v):
        n = q.shape[-2]
        pos = torch.arange(n, device=q.device)
        dist = (pos[None, :] - pos[:, None]).float()
        scores = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5
        scores = scores + self.slopes[:, None, None] * dist
        scores = scores.masked_fill(pos[None, :] > pos[:, None], float("-inf"))
        return torch.softmax(scores, dim=-1) @ v

batch = 4
heads = 16
seq = 1024
head_dim = 64

def get_inputs():
    return [torch.randn(batch, heads, seq, head_dim) for _ in range(3)]

def get_init_inputs():
    return [heads]
