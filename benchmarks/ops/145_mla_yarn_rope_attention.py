import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """DeepSeek-V2/V3 multi-head latent attention (MLA) at prefill, in bf16, with YaRN-scaled
    decoupled rotary embeddings. Queries come from one Linear and are split per head into a
    no-position part (nope_dim) and a rotary part (rope_dim). Keys and values are compressed:
    one Linear gives a latent (kv_rank) and a single rotary key (rope_dim) shared by all heads;
    the latent passes an RMSNorm (fp32, eps 1e-6, learned weight) and a second Linear expands it
    to per-head no-position keys and values (v_dim). The YaRN inverse frequencies are a buffer
    built in __init__: frequencies blended between base^(-2i/d) and the same divided by the
    scaling factor, by a linear ramp between correction dimensions found from beta_fast and
    beta_slow and the original context length; cos and sin (times the YaRN mscale ratio) are
    built in the forward from arange positions. The rotary parts are de-interleaved (view as
    pairs, transpose, reshape) and rotated with rotate_half in fp32, the shared rotary key
    expanded over the heads and concatenated after the no-position parts. Causal
    scaled_dot_product_attention uses the softmax scale head_dim^-0.5 times the YaRN mscale
    squared; an output Linear follows. Returns the output (batch, seq, hidden) and the
    compressed cache an MLA decoder would store: the normed latent and the rotated shared key
    concatenated (batch, seq, kv_rank + rope_dim), both bf16."""
    def __init__(self, hidden, heads, kv_rank, nope_dim, rope_dim, v_dim, rope_theta,
                 yarn_factor, original_max_pos, beta_fast, beta_slow, mscale):
        super().__init__()
        self.heads, self.kv_rank = heads, kv_rank
        self.nope_dim, self.rope_dim, self.v_dim = nope_dim, rope_dim, v_dim
        self.q_proj = nn.Linear(hidden, heads * (nope_dim + rope_dim), bias=False)
        self.kv_a_proj = nn.Linear(hidden, kv_rank + rope_dim, bias=False)
        self.kv_a_norm = nn.Parameter(1.0 + 0.1 * torch.randn(kv_rank))
        self.kv_b_proj = nn.Linear(kv_rank, heads * (nope_dim + v_dim), bias=False)
        self.o_proj = nn.Linear(heads * v_dim, hidden, bias=False)
        self.to(torch.bfloat16)

        def correction_dim(rotations):
            return rope_dim * math.log(original_max_pos / (rotations * 2 * math.pi)) / (2 * math.log(rope_theta))
        low = max(math.floor(correction_dim(beta_fast)), 0)
        high = min(math.ceil(correction_dim(beta_slow)), rope_dim - 1)
        ramp = ((torch.arange(rope_dim // 2, dtype=torch.float32) - low) / max(high - low, 1e-3)).clamp(0, 1)
        freq_extra = 1.0 / rope_theta ** (torch.arange(0, rope_dim, 2, dtype=torch.float32) / rope_dim)
        freq_inter = freq_extra / yarn_factor
        self.register_buffer("inv_freq", freq_inter * ramp + freq_extra * (1 - ramp))
        m = 0.1 * mscale * math.log(yarn_factor) + 1.0
        self.cos_sin_mscale = 1.0  # mscale / mscale_all_dim, equal here as in DeepSeek's configs
        self.softmax_scale = (nope_dim + rope_dim) ** -0.5 * m * m

    @staticmethod
    def _rope(x, cos, sin):
        b, h, s, d = x.shape
        x = x.float().view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
        rot = torch.cat([-x[..., d // 2:], x[..., : d // 2]], dim=-1)
        return (x * cos + rot * sin).to(torch.bfloat16)

    def forward(self, x):
        b, s, _ = x.shape
        h = self.heads
        q = self.q_proj(x).view(b, s, h, self.nope_dim + self.rope_dim).transpose(1, 2)
        q_nope, q_pe = q.split([self.nope_dim, self.rope_dim], dim=-1)
        latent, k_pe = self.kv_a_proj(x).split([self.kv_rank, self.rope_dim], dim=-1)
        lat = latent.float()
        lat = (lat * torch.rsqrt(lat.pow(2).mean(-1, keepdim=True) + 1e-6) * self.kv_a_norm.float()).to(x.dtype)
        kv = self.kv_b_proj(lat).view(b, s, h, self.nope_dim + self.v_dim).transpose(1, 2)
        k_nope, v = kv.split([self.nope_dim, self.v_dim], dim=-1)
        t = torch.arange(s, device=x.device, dtype=torch.float32)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat([freqs, freqs], dim=-1)
        cos, sin = emb.cos() * self.cos_sin_mscale, emb.sin() * self.cos_sin_mscale
        q_pe = self._rope(q_pe, cos, sin)
        k_pe = self._rope(k_pe.view(b, s, 1, self.rope_dim).transpose(1, 2), cos, sin)
        q = torch.cat([q_nope, q_pe], dim=-1)
        k = torch.cat([k_nope, k_pe.expand(b, h, s, self.rope_dim)], dim=-1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.softmax_scale)
        out = self.o_proj(o.transpose(1, 2).reshape(b, s, h * self.v_dim))
        cache = torch.cat([lat, k_pe.squeeze(1)], dim=-1)
        return out, cache

batch = 4
seq = 1024
hidden = 2048
heads = 16
kv_rank = 512
nope_dim = 128
rope_dim = 64
v_dim = 128
rope_theta = 10000.0
yarn_factor = 40.0
original_max_pos = 4096
beta_fast = 32
beta_slow = 1
mscale = 0.707

def get_inputs():
    return [torch.randn(batch, seq, hidden, dtype=torch.bfloat16)]

def get_init_inputs():
    return [hidden, heads, kv_rank, nope_dim, rope_dim, v_dim, rope_theta,
            yarn_factor, original_max_pos, beta_fast, beta_slow, mscale]
