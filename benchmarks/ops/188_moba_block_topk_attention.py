import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Mixture of Block Attention at prefill (MoBA, Moonshot AI / Kimi 2025, the moba_naive
    reference): keys are cut into blocks of block_size tokens; every query head scores the
    blocks by its dot product with the block's mean key, always keeps its own block, keeps the
    top_k best-scoring blocks in all (future blocks excluded) and runs causal attention over the
    tokens of the kept blocks only. Grouped-query attention on bf16 inputs, computed in fp32.

    Inputs: q bf16 (batch, seq, heads, head_dim); k, v bf16 (batch, seq, kv_heads, head_dim);
    heads is a multiple of kv_heads, query head h reading key/value head h // (heads/kv_heads).
    With nb = ceil(seq / block_size) blocks, block j holding tokens
    [j*block_size, min((j+1)*block_size, seq)):
    1. kmean[b, j, g] = mean of k[b, tokens of block j, g] in fp32 (the last block may be
       short: its mean is over its real tokens).
    2. gate[b, h, t, j] = <q[b, t, h], kmean[b, j, g(h)]> (fp32); for query t in block c(t):
       gate = +inf for j == c(t) and -inf for j > c(t).
    3. sel = indices of the top min(top_k, nb) gates along j; keep_block[b, h, t, j] True at
       sel. keep[b, h, t, s] = keep_block[b, h, t, block(s)] and s <= t (blocks picked among
       the -inf ones in early rows fall away here).
    4. P = softmax over s of (<q[b, t, h], k[b, s, g(h)]> / sqrt(head_dim), -inf where not
       keep); o[b, t, h] = sum_s P v[b, s, g(h)], rounded to bf16.
    Returns o bf16 (batch, seq, heads, head_dim)."""
    def __init__(self, block_size, top_k):
        super().__init__()
        self.block_size = block_size
        self.top_k = top_k

    def forward(self, q, k, v):
        b, n, h, d = q.shape
        g = k.shape[2]
        rep = h // g
        bs = self.block_size
        nb = (n + bs - 1) // bs
        qf = q.float().transpose(1, 2)                                   # (b, h, n, d)
        kf = k.float().repeat_interleave(rep, dim=2).transpose(1, 2)     # (b, h, n, d)
        vf = v.float().repeat_interleave(rep, dim=2).transpose(1, 2)
        # block mean keys
        kpad = F.pad(kf, (0, 0, 0, nb * bs - n))
        counts = (n - torch.arange(nb, device=q.device) * bs).clamp(max=bs).to(kf.dtype)
        kmean = kpad.view(b, h, nb, bs, d).sum(dim=3) / counts.view(1, 1, nb, 1)
        # block gating
        gate = torch.matmul(qf, kmean.transpose(-1, -2))                 # (b, h, n, nb)
        pos = torch.arange(n, device=q.device)
        qblock = (pos // bs).view(n, 1)
        blk = torch.arange(nb, device=q.device).view(1, nb)
        gate = gate.masked_fill(blk > qblock, float("-inf"))
        gate = gate.masked_fill(blk == qblock, float("inf"))
        sel = gate.topk(min(self.top_k, nb), dim=-1).indices
        keep_block = torch.zeros_like(gate, dtype=torch.bool).scatter(-1, sel, True)
        keep = keep_block.repeat_interleave(bs, dim=-1)[..., :n]         # (b, h, n, n)
        keep = keep & (pos.view(1, n) <= pos.view(n, 1))
        # sparse causal attention
        scores = torch.matmul(qf, kf.transpose(-1, -2)) * d ** -0.5
        scores.masked_fill_(~keep, float("-inf"))
        p = torch.softmax(scores, dim=-1)
        o = torch.matmul(p, vf)                                          # (b, h, n, d)
        return o.transpose(1, 2).to(torch.bfloat16)

batch = 1
seq = 2048
heads = 8
kv_heads = 2
head_dim = 128
block_size = 128
top_k = 4

def get_inputs():
    # keys with slowly drifting topics so that some blocks matter more than others
    topic = torch.cumsum(torch.randn(batch, seq, kv_heads, head_dim) * 0.05, dim=1)
    k = topic + torch.randn(batch, seq, kv_heads, head_dim)
    v = torch.randn(batch, seq, kv_heads, head_dim)
    q = topic.repeat_interleave(heads // kv_heads, dim=2) * 0.5 + torch.randn(batch, seq, heads, head_dim)
    return [q.to(torch.bfloat16), k.to(torch.bfloat16), v.to(torch.bfloat16)]

def get_init_inputs():
    return [block_size, top_k]
