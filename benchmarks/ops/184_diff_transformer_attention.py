import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Causal differential attention, the attention layer of the Differential Transformer
    (Ye et al. 2024, microsoft/unilm Diff-Transformer, multihead_diffattn.py without rotary
    embeddings): every head forms two softmax attention maps from two halves of its query and
    key, subtracts the second one scaled by a learned lambda, and normalises its output with a
    per-head RMSNorm.

    Input: x fp32 (batch, seq, embed_dim). H = num_heads differential heads of head_dim d
    (the paper's d = embed_dim / H / 2 at the default sizes); q, k, v are bias-free
    Linear(embed_dim, 2 H d) and out is a bias-free Linear(2 H d, embed_dim).
    1. q = q_proj(x) viewed (batch, seq, 2H, d), k = k_proj(x) viewed (batch, seq, 2H, d),
       v = v_proj(x) viewed (batch, seq, H, 2d); all moved to heads-first layout.
    2. w = q k^T * d^-0.5 (batch, 2H, seq, seq), entries with key index > query index set to
       -inf (causal), softmax over the key axis.
    3. lambda = exp(sum(lambda_q1 * lambda_k1)) - exp(sum(lambda_q2 * lambda_k2)) + lambda_init,
       a scalar from four learned (d,) vectors; lambda_init = 0.8 - 0.6 exp(-0.3 depth), depth
       being the layer index given at construction.
    4. w viewed (batch, H, 2, seq, seq); a = w[:, :, 0] - lambda * w[:, :, 1]; o = a @ v
       (batch, H, seq, 2d).
    5. o = RMSNorm over its last dim (2d) with a learned weight, eps 1e-5:
       o * rsqrt(mean(o^2) + eps) * weight; then o = o * (1 - lambda_init).
    6. o moved to (batch, seq, H * 2d) and projected by out_proj.
    Returns (batch, seq, embed_dim) fp32."""
    def __init__(self, embed_dim, num_heads, head_dim, depth):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.scaling = head_dim ** -0.5
        inner = 2 * num_heads * head_dim
        self.q_proj = nn.Linear(embed_dim, inner, bias=False)
        self.k_proj = nn.Linear(embed_dim, inner, bias=False)
        self.v_proj = nn.Linear(embed_dim, inner, bias=False)
        self.out_proj = nn.Linear(inner, embed_dim, bias=False)
        self.lambda_init = 0.8 - 0.6 * torch.exp(torch.tensor(-0.3 * depth)).item()
        d = self.head_dim
        self.lambda_q1 = nn.Parameter(torch.randn(d) * 0.1)
        self.lambda_k1 = nn.Parameter(torch.randn(d) * 0.1)
        self.lambda_q2 = nn.Parameter(torch.randn(d) * 0.1)
        self.lambda_k2 = nn.Parameter(torch.randn(d) * 0.1)
        self.subln_weight = nn.Parameter(1.0 + 0.1 * torch.randn(2 * d))
        self.eps = 1e-5

    def forward(self, x):
        b, n, _ = x.shape
        h, d = self.num_heads, self.head_dim
        q = self.q_proj(x).view(b, n, 2 * h, d).transpose(1, 2)
        k = self.k_proj(x).view(b, n, 2 * h, d).transpose(1, 2)
        v = self.v_proj(x).view(b, n, h, 2 * d).transpose(1, 2)
        w = torch.matmul(q, k.transpose(-1, -2)) * self.scaling
        causal = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)
        w = w.masked_fill(causal, float("-inf"))
        w = torch.softmax(w, dim=-1)
        lam1 = torch.exp(torch.sum(self.lambda_q1 * self.lambda_k1))
        lam2 = torch.exp(torch.sum(self.lambda_q2 * self.lambda_k2))
        lam = lam1 - lam2 + self.lambda_init
        w = w.view(b, h, 2, n, n)
        a = w[:, :, 0] - lam * w[:, :, 1]
        o = torch.matmul(a, v)                                    # (b, h, n, 2d)
        o = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + self.eps) * self.subln_weight
        o = o * (1.0 - self.lambda_init)
        o = o.transpose(1, 2).reshape(b, n, h * 2 * d)
        return self.out_proj(o)

batch = 2
seq = 1024
embed_dim = 1024
num_heads = 8
head_dim = 64
depth = 6

def get_inputs():
    return [torch.randn(batch, seq, embed_dim)]

def get_init_inputs():
    return [embed_dim, num_heads, head_dim, depth]
