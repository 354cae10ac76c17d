import math

import torch
import torch.nn as nn


class Model(nn.Module):
    """T5's relative position bias added to attention scores: each query-key offset is put in a
    bucket (exact for small offsets, logarithmic beyond, both directions), the bucket indexes
    a learned per-head table, and the bias is added to the scores before softmax."""
    def __init__(self, heads, buckets, max_distance):
        super().__init__()
        self.buckets, self.max_distance = buckets, max_distance
        self.table = nn.Embedding(buckets, heads)

    def bucket(self, rel):
        half = self.buckets // 2
        out = (rel > 0).long() * half
        n = rel.abs()
        exact = half // 2
        large = exact + (torch.log(n.float() / exact + 1e-6) / math.log(self.max_distance / exact)
                         * (half - exact)).long()
        large = torch.clamp(large, max=half - 1)
        return out + torch.where(n < exact, n, large)

    def forward(self, scores):
        q, k = scores.shape[-2], scores.shape[-1]
        rel = torch.arange(k, device=scores.device)[None, :] - torch.arange(q, device=scores.device)[:, None]
        bias = self.table(self.bucket(rel)).permute(2, 0, 1)
        return torch.softmax(scores + bias, dim=-1)

batch = 8
heads = 16
seq = 1024
buckets = 32
max_distance = 128

def get_inputs():
    return [torch.randn(batch, heads, seq, seq)]

def get_init_inputs():
    return [heads, buckets, max_distance]
