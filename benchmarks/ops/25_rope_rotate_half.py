import torch
import torch.nn as nn


class Model(nn.Module):
    """Rotary position embedding (rotate-half form), cos/sin computed from positions."""

    def forward(self, q, pos):
        d = q.shape[-1]
        inv = 1.0 / (10000.0 ** (torch.arange(0, d, 2, device=q.device, dtype=torch.float32) / d))
        ang = pos[:, None].float() * inv[None, :]
        cos = torch.cat([ang.cos(), ang.cos()], -1)[None, :, None, :]
        sin = torch.cat([ang.sin(), ang.sin()], -1)[None, :, None, :]
        x1, x2 = q[..., : d // 2], q[..., d // 2:]
        rot = torch.cat([-x2, x1], -1)
        return (q.float() * cos + rot.float() * sin).to(q.dtype)


batch, seq, heads, head_dim = 4, 2048, 32, 128


def get_inputs():
    return [torch.randn(batch, seq, heads, head_dim, dtype=torch.bfloat16), torch.arange(seq)]


def get_init_inputs():
    return []
