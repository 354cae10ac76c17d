import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """The gated delta rule of Gated DeltaNet (Yang et al. 2024, as in Qwen3-Next's linear
    attention layers), computed at prefill in chunked (WY / UT-transform) form with Python
    loops, as in flash-linear-attention's reference implementation.

    Inputs: q, k (batch, seqlen, heads, dk) bf16, v (batch, seqlen, heads, dv) bf16, a and b
    (batch, seqlen, heads) bf16 (the raw gate and write-strength projections). Parameters
    (per head, fp32): A_log and dt_bias. Everything is computed in fp32. q and k are
    L2-normalised over their last dim (x / sqrt(sum x^2 + 1e-6)), q is then multiplied by
    scale = dk ** -0.5. The per-step log-decay is g_t = -exp(A_log) * softplus(a_t + dt_bias)
    (<= 0) and the write strength beta_t = sigmoid(b_t).

    Semantics (per batch and head, the state S is dk x dv, starting at zero):
        S_t = exp(g_t) * (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T
        o_t = S_t^T q_t
    The forward evaluates exactly this recurrence chunkwise with chunk length chunk_len: the
    sequence is zero-padded to a whole number of chunks (ceil(seqlen / chunk_len), computed in
    the forward); within a chunk G is the inclusive cumulative sum of g; the strictly lower
    triangular matrix A[i, j] = beta_i (k_i . k_j) exp(G_i - G_j) (j < i) gives
    T = (I + A)^{-1}, computed by forward substitution in a Python loop over rows; then
    U = T (beta * v) and W = T (beta * exp(G) * k). A Python loop over chunks carries the fp32
    state: v_new = U - W S, o = (q * exp(G)) S + (mask_{j<=i}(q k^T * exp(G_i - G_j))) v_new,
    S <- exp(G_last) S + (k * exp(G_last - G))^T v_new. The padding is cut off.

    Returns o (batch, seqlen, heads, dv) bf16 and the final state S (batch, heads, dk, dv)
    fp32."""
    def __init__(self, heads, chunk_len):
        super().__init__()
        self.chunk_len = chunk_len
        self.A_log = nn.Parameter(torch.log(torch.empty(heads).uniform_(1.0, 16.0)))
        dt = torch.exp(torch.rand(heads) * (torch.log(torch.tensor(0.1)) - torch.log(torch.tensor(0.001)))
                       + torch.log(torch.tensor(0.001)))
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))

    def forward(self, q, k, v, a, b):
        bsz, seqlen, h, dk = q.shape
        dv = v.shape[-1]
        c = self.chunk_len
        nc = (seqlen + c - 1) // c
        pad = nc * c - seqlen
        q = q.float()
        k = k.float()
        q = q * torch.rsqrt((q * q).sum(-1, keepdim=True) + 1e-6) * dk ** -0.5
        k = k * torch.rsqrt((k * k).sum(-1, keepdim=True) + 1e-6)
        g = -torch.exp(self.A_log) * F.softplus(a.float() + self.dt_bias)     # (b, t, h)
        beta = torch.sigmoid(b.float())
        # to (b, h, t, d), padded, chunked
        q, k, v = (F.pad(x.transpose(1, 2), (0, 0, 0, pad)) for x in (q, k, v.float()))
        g, beta = (F.pad(x.transpose(1, 2), (0, pad)) for x in (g, beta))
        q, k, v = (x.unflatten(2, (nc, c)) for x in (q, k, v))                # (b, h, n, c, d)
        g, beta = (x.unflatten(2, (nc, c)) for x in (g, beta))                # (b, h, n, c)
        G = g.cumsum(-1)
        k_beta = k * beta.unsqueeze(-1)
        v_beta = v * beta.unsqueeze(-1)
        decay = (G.unsqueeze(-1) - G.unsqueeze(-2)).tril().exp().tril()      # (b, h, n, c, c)
        upper_incl = torch.triu(torch.ones(c, c, dtype=torch.bool, device=q.device), diagonal=0)
        attn = -((k_beta @ k.transpose(-1, -2)) * decay).masked_fill(upper_incl, 0.0)
        for i in range(1, c):
            row = attn[..., i, :i].clone()
            attn[..., i, :i] = row + (row.unsqueeze(-1) * attn[..., :i, :i].clone()).sum(-2)
        T = attn + torch.eye(c, dtype=attn.dtype, device=attn.device)
        U = T @ v_beta
        W = T @ (k_beta * G.exp().unsqueeze(-1))
        S = q.new_zeros(bsz, h, dk, dv)
        o = torch.empty_like(U)
        upper_strict = torch.triu(torch.ones(c, c, dtype=torch.bool, device=q.device), diagonal=1)
        for n in range(nc):
            q_n, k_n, G_n = q[:, :, n], k[:, :, n], G[:, :, n]
            intra = (q_n @ k_n.transpose(-1, -2) * decay[:, :, n]).masked_fill(upper_strict, 0.0)
            v_new = U[:, :, n] - W[:, :, n] @ S
            o[:, :, n] = (q_n * G_n.exp().unsqueeze(-1)) @ S + intra @ v_new
            last = G_n[..., -1:]
            S = S * last.exp().unsqueeze(-1) + (k_n * (last - G_n).exp().unsqueeze(-1)).transpose(-1, -2) @ v_new
        o = o.flatten(2, 3)[:, :, :seqlen].transpose(1, 2)
        return o.to(torch.bfloat16), S

batch = 2
seqlen = 4000
heads = 16
dk = 128
dv = 128
chunk_len = 64

def get_inputs():
    q = torch.randn(batch, seqlen, heads, dk).to(torch.bfloat16)
    k = torch.randn(batch, seqlen, heads, dk).to(torch.bfloat16)
    v = torch.randn(batch, seqlen, heads, dv).to(torch.bfloat16)
    a = torch.randn(batch, seqlen, heads).to(torch.bfloat16)
    b = torch.randn(batch, seqlen, heads).to(torch.bfloat16)
    return [q, k, v, a, b]

def get_init_inputs():
    return [heads, chunk_len]
