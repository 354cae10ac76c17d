import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Transformer-XL relative attention: a content term (queries plus a learned bias u against
    keys) and a position term (queries plus a learned bias v against projected relative
    position embeddings), the position term realigned by the "relative shift" trick (a zero
    column padded on the left, the scores viewed as (klen + 1, qlen), the first row dropped,
    viewed back), a causal mask, softmax, and the weighted sum of the values. Inputs are laid
    out (batch, seq, heads, head_dim), so every einsum reads them strided."""
    def __init__(self, heads, head_dim):
        super().__init__()
        self.r_w_bias = nn.Parameter(torch.randn(heads, head_dim) * 0.1)
        self.r_r_bias = nn.Parameter(torch.randn(heads, head_dim) * 0.1)
        self.scale = head_dim ** -0.5

    def forward(self, q, k, v, r):
        ac = torch.einsum("bihd,bjhd->bhij", q + self.r_w_bias, k)
        bd = torch.einsum("bihd,jhd->bhij", q + self.r_r_bias, r)
        b, h, i, j = bd.shape
        bd = F.pad(bd, (1, 0)).view(b, h, j + 1, i)[:, :, 1:].reshape(b, h, i, j)
        score = (ac + bd) * self.scale
        causal = torch.triu(torch.ones(i, j, dtype=torch.bool, device=q.device), diagonal=1)
        prob = torch.softmax(score.masked_fill(causal, float("-inf")), dim=-1)
        return torch.einsum("bhij,bjhd->bihd", prob, v).flatten(2)

batch = 8
seq = 512
heads = 8
head_dim = 64

def get_inputs():
    q = torch.randn(batch, seq, heads, head_dim)
    k = torch.randn(batch, seq, heads, head_dim)
    v = torch.randn(batch, seq, heads, head_dim)
    r = torch.randn(seq, heads, head_dim)
    return [q, k, v, r]

def get_init_inputs():
    return [heads, head_dim]
