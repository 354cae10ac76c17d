"""Rotary position embedding on q, HF/GPT-NeoX style (rotate_half), in bf16.

q is [B, S, H, D]; cos and sin are [S, D] caches (the two halves of the last axis hold the
same frequencies, as HF builds them with cat(freqs, freqs)).
"""

import torch


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    x1 = x[..., :half]
    x2 = x[..., half:]
    return torch.cat((-x2, x1), dim=-1)


def run(q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    cos = cos[None, :, None, :]
    sin = sin[None, :, None, :]
    return (q * cos) + (rotate_half(q) * sin)
