import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A diffusion-transformer block with adaLN-Zero conditioning (DiT; as in PixArt-alpha, SD3
    and Flux, with SD3's per-head QK RMSNorm). The conditioning vector c (timestep plus class
    embedding, batch x hidden) goes through SiLU and one Linear to 6 x hidden, chunked into
    shift, scale and gate for the attention branch and for the MLP branch, each broadcast over
    the tokens. Each branch takes LayerNorm without affine (eps 1e-6), modulates it as
    norm(x) * (1 + scale) + shift, and adds its result back to x multiplied by the gate. The
    attention branch is a fused qkv Linear, heads split by view, RMSNorm with learned weights
    (eps 1e-6) on the queries and keys of each head, non-causal scaled dot-product attention
    and an output Linear; the MLP branch is Linear, tanh-GELU, Linear (4x hidden). The
    modulation Linear keeps its default initialisation here (not the zeros of a fresh
    adaLN-Zero block) so that both branches count. Returns the tokens (batch, tokens,
    hidden)."""
    def __init__(self, hidden, heads, mlp_ratio):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.ada = nn.Linear(hidden, 6 * hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.q_norm = nn.Parameter(1.0 + 0.1 * torch.randn(self.head_dim))
        self.k_norm = nn.Parameter(1.0 + 0.1 * torch.randn(self.head_dim))
        self.proj = nn.Linear(hidden, hidden)
        self.fc1 = nn.Linear(hidden, mlp_ratio * hidden)
        self.fc2 = nn.Linear(mlp_ratio * hidden, hidden)

    @staticmethod
    def _modulate(x, shift, scale):
        return F.layer_norm(x, x.shape[-1:], eps=1e-6) * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)

    def forward(self, x, c):
        b, n, d = x.shape
        shift_a, scale_a, gate_a, shift_m, scale_m, gate_m = self.ada(F.silu(c)).chunk(6, dim=-1)
        h = self._modulate(x, shift_a, scale_a)
        q, k, v = self.qkv(h).view(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q = F.rms_norm(q, (self.head_dim,), self.q_norm, eps=1e-6)
        k = F.rms_norm(k, (self.head_dim,), self.k_norm, eps=1e-6)
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, d)
        x = x + gate_a.unsqueeze(1) * self.proj(a)
        h = self._modulate(x, shift_m, scale_m)
        x = x + gate_m.unsqueeze(1) * self.fc2(F.gelu(self.fc1(h), approximate="tanh"))
        return x

batch = 8
tokens = 256
hidden = 1152
heads = 16
mlp_ratio = 4

def get_inputs():
    x = torch.randn(batch, tokens, hidden)
    c = torch.randn(batch, hidden)
    return [x, c]

def get_init_inputs():
    return [hidden, heads, mlp_ratio]
