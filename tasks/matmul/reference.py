"""Dense bf16 matrix product a @ b with fp32 accumulation (what torch.matmul does for bf16)."""

import torch


def run(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.matmul(a, b)
