"""SwiGLU activation of a gated MLP: silu(gate) * up, in bf16 (gate and up are separate inputs)."""

import torch
import torch.nn.functional as F


def run(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    return F.silu(gate) * up
