"""Row softmax: bf16 in, fp32 math (max-subtracted exp, sum, divide), bf16 out."""

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    h = x.to(torch.float32)
    row_max = h.amax(-1, keepdim=True)
    e = torch.exp(h - row_max)
    return (e / e.sum(-1, keepdim=True)).to(x.dtype)
