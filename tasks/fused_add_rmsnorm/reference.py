"""Residual add followed by HF-style RMSNorm, as in a Llama decoder layer.

``h = x + residual`` (in bf16, like ``hidden_states = residual + hidden_states``), then
LlamaRMSNorm on ``h``. Returns ``(normed, h)``: the normalised activations and the new
residual stream for the next layer.
"""

import torch

EPS = 1e-6


def run(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor):
    h = x + residual
    input_dtype = h.dtype
    hf = h.to(torch.float32)
    variance = hf.pow(2).mean(-1, keepdim=True)
    hf = hf * torch.rsqrt(variance + EPS)
    return weight * hf.to(input_dtype), h
