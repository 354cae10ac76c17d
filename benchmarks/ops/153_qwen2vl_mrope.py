import torch
import torch.nn as nn


class Model(nn.Module):
    """Qwen2-VL's multimodal rotary position embedding (M-RoPE) applied to queries and keys.
    position_ids is int64 (3, batch, seq): a temporal, a height and a width position per token
    (text tokens carry the same value on all three axes; image and video tokens carry their grid
    coordinates). The inverse frequencies rope_theta ** (-2i / head_dim), i < head_dim / 2, are a
    fp32 buffer. In the forward, freqs = position * inv_freq in fp32 for each of the three axes,
    duplicated to head_dim lanes (cat(freqs, freqs)), giving (3, batch, seq, head_dim). The lanes
    are split into sections mrope_section * 2 (for (16, 24, 24): 16, 24, 24, 16, 24, 24) and
    section j takes its angles from axis j % 3; this is done with a lane-to-axis buffer of shape
    (head_dim,) and a gather over the axis dimension. cos and sin of the selected angles are
    broadcast over the heads, and q (batch, q_heads, seq, head_dim) and k (batch, kv_heads, seq,
    head_dim), both bf16, are rotated in fp32 as x * cos + rotate_half(x) * sin, with
    rotate_half(x) = cat(-x2, x1) on the two halves of the lanes, and cast back to bf16.
    Returns the rotated q and k, bf16, in the input shapes."""
    def __init__(self, head_dim, rope_theta, mrope_section):
        super().__init__()
        inv_freq = 1.0 / rope_theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        self.register_buffer("inv_freq", inv_freq)
        sections = list(mrope_section) * 2
        axis = torch.cat([torch.full((n,), j % 3, dtype=torch.int64) for j, n in enumerate(sections)])
        self.register_buffer("lane_axis", axis)

    @staticmethod
    def _rotate(x, cos, sin):
        xf = x.float()
        x1, x2 = xf.chunk(2, dim=-1)
        return (xf * cos + torch.cat([-x2, x1], dim=-1) * sin).to(x.dtype)

    def forward(self, q, k, position_ids):
        _, b, s = position_ids.shape
        d = self.lane_axis.shape[0]
        freqs = position_ids.float().unsqueeze(-1) * self.inv_freq                # (3, b, s, d/2)
        emb = torch.cat([freqs, freqs], dim=-1)                                    # (3, b, s, d)
        idx = self.lane_axis.view(1, 1, 1, d).expand(1, b, s, d)
        emb = emb.gather(0, idx).squeeze(0)                                        # (b, s, d)
        cos = emb.cos().unsqueeze(1)
        sin = emb.sin().unsqueeze(1)
        return self._rotate(q, cos, sin), self._rotate(k, cos, sin)

batch = 4
seq = 4096
q_heads = 28
kv_heads = 4
head_dim = 128
rope_theta = 1000000.0
mrope_section = (16, 24, 24)
# (frames, height, width) of the vision grid of each sample, after the 2x2 patch merge
vision_grids = [(1, 32, 42), (2, 24, 32), (1, 48, 64), (4, 16, 16)]

def _mrope_positions(batch, seq):
    # text prefix, one image or video, text suffix; as in Qwen2-VL's get_rope_index
    pos = torch.empty(3, batch, seq, dtype=torch.int64)
    for i in range(batch):
        t, h, w = vision_grids[i % len(vision_grids)]
        prefix = min(16 + 24 * i, seq // 4)
        while t * h * w > seq - prefix - 1 and (h > 1 or w > 1):
            h, w = max(h // 2, 1), max(w // 2, 1)
        n_vis = t * h * w
        pos[:, i, :prefix] = torch.arange(prefix)
        tt = torch.arange(t).view(t, 1, 1).expand(t, h, w).reshape(-1)
        hh = torch.arange(h).view(1, h, 1).expand(t, h, w).reshape(-1)
        ww = torch.arange(w).view(1, 1, w).expand(t, h, w).reshape(-1)
        pos[:, i, prefix:prefix + n_vis] = torch.stack([tt, hh, ww]) + prefix
        start = prefix + max(t, h, w)
        rest = seq - prefix - n_vis
        pos[:, i, prefix + n_vis:] = torch.arange(start, start + rest)
    return pos

def get_inputs():
    q = torch.randn(batch, q_heads, seq, head_dim, dtype=torch.bfloat16)
    k = torch.randn(batch, kv_heads, seq, head_dim, dtype=torch.bfloat16)
    return [q, k, _mrope_positions(batch, seq)]

def get_init_inputs():
    return [head_dim, rope_theta, mrope_section]
