import torch
import torch.nn as nn


class Model(nn.Module):
    """gpt-oss-style sliding-window attention with learned attention sinks and grouped-query
    heads, at prefill. q is bf16 (batch, q_heads, seq, head_dim); k and v are bf16 (batch,
    kv_heads, seq, head_dim), already rotated. The query heads are viewed as (kv_heads, group)
    with group = q_heads // kv_heads, and each group is multiplied by its shared key head through
    a broadcasting matmul (no copy of k or v). The bf16 scores are taken to fp32 and scaled by
    head_dim ** -0.5. Query i may see key j only when 0 <= i - j < window (a causal band built
    from arange differences; masked scores are -inf). Each query head has one learned fp32 sink
    logit (a parameter of shape (q_heads,)): it is appended as an extra last column of the
    scores, the softmax (fp32) is taken over seq + 1 columns and the sink column is dropped, so
    the sink only absorbs probability mass. The weights are cast to bf16 and multiplied with v.
    Returns the output in bf16, (batch, seq, q_heads * head_dim)."""
    def __init__(self, q_heads, kv_heads, head_dim, window):
        super().__init__()
        self.q_heads, self.kv_heads, self.window = q_heads, kv_heads, window
        self.scale = head_dim ** -0.5
        self.sinks = nn.Parameter(torch.randn(q_heads) + 1.0)

    def forward(self, q, k, v):
        b, hq, s, d = q.shape
        hkv = k.shape[1]
        g = hq // hkv
        qg = q.view(b, hkv, g, s, d)
        scores = torch.matmul(qg, k.unsqueeze(2).transpose(-1, -2)).float() * self.scale  # (b, hkv, g, s, s)
        pos = torch.arange(s, device=q.device)
        diff = pos.unsqueeze(1) - pos.unsqueeze(0)
        allowed = (diff >= 0) & (diff < self.window)
        scores = scores.masked_fill(~allowed, float("-inf"))
        sink = self.sinks.view(1, hkv, g, 1, 1).expand(b, hkv, g, s, 1)
        w = torch.softmax(torch.cat([scores, sink], dim=-1), dim=-1)[..., :-1]
        out = torch.matmul(w.to(v.dtype), v.unsqueeze(2))                                   # (b, hkv, g, s, d)
        return out.reshape(b, hq, s, d).transpose(1, 2).reshape(b, s, hq * d)

batch = 2
seq = 2048
q_heads = 64
kv_heads = 8
head_dim = 64
window = 128

def get_inputs():
    q = torch.randn(batch, q_heads, seq, head_dim, dtype=torch.bfloat16)
    k = torch.randn(batch, kv_heads, seq, head_dim, dtype=torch.bfloat16)
    v = torch.randn(batch, kv_heads, seq, head_dim, dtype=torch.bfloat16)
    return [q, k, v]

def get_init_inputs():
    return [q_heads, kv_heads, head_dim, window]
