"""LayerNorm with weight and bias, computed in fp32 from bf16 input and cast back."""

import torch

EPS = 1e-5


def run(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    h = x.to(torch.float32)
    mean = h.mean(-1, keepdim=True)
    centered = h - mean
    variance = centered.pow(2).mean(-1, keepdim=True)
    y = centered * torch.rsqrt(variance + EPS)
    y = y * weight.to(torch.float32) + bias.to(torch.float32)
    return y.to(x.dtype)
