import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Grouped-query causal attention: each key/value head serves several query heads
    (repeat_interleave), then scaled dot-product attention."""
    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, q, k, v):
        k = k.repeat_interleave(self.groups, dim=1)
        v = v.repeat_interleave(self.groups, dim=1)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

batch = 2
q_heads = 32
kv_heads = 8
seq = 1024
head_dim = 64

def get_inputs():
    return [torch.randn(batch, q_heads, seq, head_dim), torch.randn(batch, kv_heads, seq, head_dim),
            torch.randn(batch, kv_heads, seq, head_dim)]

def get_init_inputs():
    return [q_heads // kv_heads]
