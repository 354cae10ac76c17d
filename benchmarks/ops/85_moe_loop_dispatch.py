import torch
import torch.nn as nn


class Model(nn.Module):
    """Top-1 mixture of experts written the way many codebases do: a loop over the experts,
    each applied to the tokens routed to it (boolean-mask indexing), results scattered back
    and scaled by the router probability."""
    def __init__(self, dim, experts):
        super().__init__()
        self.router = nn.Linear(dim, experts, bias=False)
        self.experts = nn.ModuleList([nn.Linear(dim, dim) for _ in range(experts)])

    def forward(self, x):
        probs = torch.softmax(self.router(x), dim=-1)
        weight, choice = probs.max(dim=-1)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            mask = choice == e
            out[mask] = expert(x[mask]) * weight[mask, None]
        return out

tokens = 4096
dim = 512
experts = 8

def get_inputs():
    return [torch.randn(tokens, dim)]

def get_init_inputs():
    return [dim, experts]
