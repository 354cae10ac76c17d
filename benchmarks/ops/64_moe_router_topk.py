import torch
import torch.nn as nn


class Model(nn.Module):
    """Mixture-of-experts router: logits, softmax, top-k experts, renormalised weights."""
    def __init__(self, dim, experts, k):
        super().__init__()
        self.gate = nn.Linear(dim, experts, bias=False)
        self.k = k

    def forward(self, x):
        probs = torch.softmax(self.gate(x), dim=-1)
        weights, index = torch.topk(probs, self.k, dim=-1)
        return weights / weights.sum(dim=-1, keepdim=True), index

tokens = 8192
dim = 2048
experts = 64
k = 2

def get_inputs():
    return [torch.randn(tokens, dim)]

def get_init_inputs():
    return [dim, experts, k]
