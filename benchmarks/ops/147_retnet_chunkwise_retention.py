import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """RetNet's multi-scale retention in its chunkwise recurrent form (Sun et al., 2023), as
    used for long-sequence training. Each head h has a fixed decay gamma_h = 1 - 2^(-5 - h).
    Buffers built in __init__ for the chunk length C hold, per head, the intra-chunk decay mask
    D[i, j] = gamma^(i - j) for i >= j and 0 above the diagonal, the query decay gamma^(i + 1),
    the key decay gamma^(C - 1 - j) and the whole-chunk decay gamma^C. The fp16 queries, keys
    (scaled by key_dim^-0.5) and values (batch, heads, seqlen, dim) are computed on in fp32. A
    Python loop over the seqlen / C chunks computes, for each chunk, the inner part
    (Q K^T * D) V plus the cross-chunk part (Q S) * query decay from the running state S
    (batch, heads, key_dim, value_dim, zero at the start), then updates
    S <- gamma^C S + (K * key decay)^T V. The chunk outputs are concatenated, normalised per
    head over value_dim (the GroupNorm with one group per head, no affine, eps 1e-6), heads
    merged into the channels and multiplied by SiLU of the fp16 gate (batch, seqlen,
    heads * value_dim). Returns the gated output in fp16 and the final state in fp32."""
    def __init__(self, heads, key_dim, chunk_len):
        super().__init__()
        self.scale = key_dim ** -0.5
        self.chunk_len = chunk_len
        log_gamma = torch.log1p(-torch.pow(2.0, -5.0 - torch.arange(heads, dtype=torch.float64)))
        i = torch.arange(chunk_len, dtype=torch.float64)
        diff = i[:, None] - i[None, :]
        mask = torch.exp(log_gamma[:, None, None] * diff.clamp(min=0)) * (diff >= 0)
        self.register_buffer("decay_mask", mask.float())                                   # (h, C, C)
        self.register_buffer("q_decay", torch.exp(log_gamma[:, None, None] * (i[:, None] + 1)).float())
        self.register_buffer("k_decay", torch.exp(log_gamma[:, None, None] * (chunk_len - 1 - i[:, None])).float())
        self.register_buffer("chunk_decay", torch.exp(log_gamma * chunk_len).float()[:, None, None])

    def forward(self, q, k, v, gate):
        b, h, seqlen, dk = q.shape
        dv = v.shape[-1]
        c = self.chunk_len
        q, k, v = q.float(), k.float() * self.scale, v.float()
        state = q.new_zeros(b, h, dk, dv)
        outs = []
        for i in range(seqlen // c):
            qi, ki, vi = q[:, :, i * c:(i + 1) * c], k[:, :, i * c:(i + 1) * c], v[:, :, i * c:(i + 1) * c]
            inner = (qi @ ki.transpose(-1, -2) * self.decay_mask) @ vi
            cross = (qi @ state) * self.q_decay
            outs.append(inner + cross)
            state = state * self.chunk_decay + (ki * self.k_decay).transpose(-1, -2) @ vi
        o = torch.cat(outs, dim=2)
        o = F.layer_norm(o, (dv,), eps=1e-6)
        o = o.transpose(1, 2).reshape(b, seqlen, h * dv)
        return (F.silu(gate.float()) * o).to(gate.dtype), state

batch = 4
heads = 8
seqlen = 2048
key_dim = 64
value_dim = 128
chunk_len = 256

def get_inputs():
    q = torch.randn(batch, heads, seqlen, key_dim, dtype=torch.float16)
    k = torch.randn(batch, heads, seqlen, key_dim, dtype=torch.float16)
    v = torch.randn(batch, heads, seqlen, value_dim, dtype=torch.float16)
    gate = torch.randn(batch, seqlen, heads * value_dim, dtype=torch.float16)
    return [q, k, v, gate]

def get_init_inputs():
    return [heads, key_dim, chunk_len]
