import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """One HSTU layer of a generative recommender (Zhai et al. 2024, "Actions Speak Louder than
    Words", meta-recsys/generative-recommenders SequentialTransductionUnitJagged on padded
    sequences) with its relative attention bias from positions and bucketed int64 timestamp
    gaps: pointwise SiLU attention (no softmax) divided by the sequence length, a layer-normed
    output gated by U, a projection and a residual.

    Inputs: x fp32 (batch, seq, embed_dim), user histories left-aligned and zero past each
    length; timestamps int64 (batch, seq), unix seconds, non-decreasing within the real part and
    0 past it (as jagged-to-padded conversion leaves them); lengths int64 (batch,), in [1, seq].
    1. xn = layer_norm(x) over embed_dim, no affine, eps 1e-6; h = silu(xn @ W_uvqk),
       W_uvqk (embed_dim, heads*(2*linear_dim + 2*attn_dim)), split in this order into
       u, v (batch, seq, heads*linear_dim) and q, k (batch, seq, heads*attn_dim), each viewed
       per head.
    2. Relative bias rab (batch, seq, seq), the same for every head:
       position part pos_w[seq - 1 + j - i] (pos_w has 2*seq - 1 entries, i the query, j the
       key); time part: ext = timestamps with its last column appended again (batch, seq + 1),
       gap[b, i, j] = ext[b, i + 1] - ext[b, j] (int64), bucket = trunc(log(max(|gap|, 1)) /
       0.301) with the log in fp32, clamped to [0, num_buckets]; ts_w[bucket]
       (ts_w has num_buckets + 1 entries). rab = position part + time part.
    3. a[b, h, i, j] = silu(<q[b, i, h], k[b, j, h]> + rab[b, i, j]) / seq, kept where
       j <= i and j < lengths[b], else 0.
    4. o[b, i, h] = sum_j a[b, h, i, j] v[b, j, h]; o viewed (batch, seq, heads*linear_dim),
       layer_norm over that last dim (no affine, eps 1e-6), times u.
    5. y = x + Linear(heads*linear_dim, embed_dim, with bias)(o); rows i >= lengths[b] set
       to 0.
    Returns y fp32 (batch, seq, embed_dim)."""
    def __init__(self, embed_dim, heads, attn_dim, linear_dim, max_seq_len, num_buckets):
        super().__init__()
        self.embed_dim, self.heads = embed_dim, heads
        self.attn_dim, self.linear_dim = attn_dim, linear_dim
        self.max_seq_len, self.num_buckets = max_seq_len, num_buckets
        out = heads * (2 * linear_dim + 2 * attn_dim)
        self.uvqk = nn.Parameter(torch.randn(embed_dim, out) * embed_dim ** -0.5)
        self.o = nn.Linear(heads * linear_dim, embed_dim)
        self.pos_w = nn.Parameter(0.5 * torch.randn(2 * max_seq_len - 1))
        self.ts_w = nn.Parameter(0.5 * torch.randn(num_buckets + 1))
        self.eps = 1e-6

    def _rel_bias(self, timestamps):
        b, n = timestamps.shape
        i = torch.arange(n, device=timestamps.device)
        rel_pos = self.pos_w[self.max_seq_len - 1 + i.view(1, n) - i.view(n, 1)]     # (n, n)
        ext = torch.cat([timestamps, timestamps[:, n - 1:n]], dim=1)
        gap = ext[:, 1:].unsqueeze(2) - ext[:, :-1].unsqueeze(1)                      # (b, n, n)
        bucket = (torch.log(gap.abs().clamp(min=1).float()) / 0.301).long()
        bucket = bucket.clamp(min=0, max=self.num_buckets)
        return rel_pos.unsqueeze(0) + self.ts_w[bucket]

    def forward(self, x, timestamps, lengths):
        b, n, _ = x.shape
        h, da, dl = self.heads, self.attn_dim, self.linear_dim
        xn = F.layer_norm(x, (self.embed_dim,), eps=self.eps)
        uvqk = F.silu(xn @ self.uvqk)
        u, v, q, k = torch.split(uvqk, [h * dl, h * dl, h * da, h * da], dim=-1)
        v = v.view(b, n, h, dl)
        q = q.view(b, n, h, da)
        k = k.view(b, n, h, da)
        qk = torch.einsum("bnhd,bmhd->bhnm", q, k) + self._rel_bias(timestamps).unsqueeze(1)
        pos = torch.arange(n, device=x.device)
        valid = (pos.view(1, 1, n) <= pos.view(1, n, 1)) & (pos.view(1, 1, n) < lengths.view(b, 1, 1))
        a = F.silu(qk) / n * valid.unsqueeze(1).to(qk.dtype)
        o = torch.einsum("bhnm,bmhd->bnhd", a, v).reshape(b, n, h * dl)
        o = u * F.layer_norm(o, (h * dl,), eps=self.eps)
        y = x + self.o(o)
        row_valid = (pos.view(1, n) < lengths.view(b, 1)).unsqueeze(-1)
        return y * row_valid.to(y.dtype)

batch = 16
seq = 512
embed_dim = 512
heads = 4
attn_dim = 128
linear_dim = 128
num_buckets = 128

def get_inputs():
    lengths = torch.randint(1, seq + 1, (batch,))
    lengths[0] = seq
    valid = torch.arange(seq).unsqueeze(0) < lengths.unsqueeze(1)
    x = torch.randn(batch, seq, embed_dim) * valid.unsqueeze(-1)
    # gaps between user actions: seconds to months, log-normal
    gaps = torch.exp(6.0 + 3.0 * torch.randn(batch, seq)).clamp(max=1e7).long()
    start = torch.randint(1_600_000_000, 1_700_000_000, (batch, 1))
    timestamps = (start + torch.cumsum(gaps, dim=1)) * valid
    return [x, timestamps, lengths]

def get_init_inputs():
    return [embed_dim, heads, attn_dim, linear_dim, seq, num_buckets]
