"""HF-style RMSNorm as in LlamaRMSNorm: upcast to fp32, normalise, cast back, scale."""

import torch

EPS = 1e-6


def run(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    input_dtype = x.dtype
    h = x.to(torch.float32)
    variance = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(variance + EPS)
    return weight * h.to(input_dtype)
