import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Causal scaled dot-product attention over (batch, heads, seq, head_dim)."""

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


batch, heads, seq, head_dim = 4, 16, 1024, 64


def get_inputs():
    return [torch.randn(batch, heads, seq, head_dim) for _ in range(3)]


def get_init_inputs():
    return []
