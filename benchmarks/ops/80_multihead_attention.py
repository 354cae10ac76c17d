import torch
import torch.nn as nn


class Model(nn.Module):
    """Self-attention through nn.MultiheadAttention (batch first, no attention weights returned)."""
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x):
        out, _ = self.attn(x, x, x, need_weights=False)
        return out

batch = 8
seq = 512
dim = 512
heads = 8

def get_inputs():
    return [torch.randn(batch, seq, dim)]

def get_init_inputs():
    return [dim, heads]
