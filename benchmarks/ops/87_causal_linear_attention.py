import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Causal linear attention: ELU+1 feature maps, running sums of key-value outer products
    and of keys (cumsum over the sequence), each query read against its prefix."""
    def __init__(self, eps):
        super().__init__()
        self.eps = eps

    def forward(self, q, k, v):
        q = F.elu(q) + 1
        k = F.elu(k) + 1
        kv = torch.einsum("bhsd,bhse->bhsde", k, v).cumsum(dim=2)
        z = k.cumsum(dim=2)
        num = torch.einsum("bhsd,bhsde->bhse", q, kv)
        den = torch.einsum("bhsd,bhsd->bhs", q, z)[..., None] + self.eps
        return num / den

batch = 2
heads = 8
seq = 512
dim = 32

def get_inputs():
    return [torch.randn(batch, heads, seq, dim), torch.randn(batch, heads, seq, dim),
            torch.randn(batch, heads, seq, dim)]

def get_init_inputs():
    return [1e-6]
