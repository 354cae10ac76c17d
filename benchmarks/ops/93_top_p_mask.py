import torch
import torch.nn as nn


class Model(nn.Module):
    """Nucleus (top-p) filtering of next-token logits: sorted probabilities, their running
    sum, tokens past the threshold (keeping the first) set to -inf, scattered back in place."""
    def __init__(self, top_p):
        super().__init__()
        self.top_p = top_p

    def forward(self, logits):
        sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
        cumulative = torch.softmax(sorted_logits, dim=-1).cumsum(dim=-1)
        remove = cumulative > self.top_p
        remove[..., 1:] = remove[..., :-1].clone()
        remove[..., 0] = False
        mask = remove.scatter(-1, order, remove)
        return logits.masked_fill(mask, float("-inf"))

batch = 64
vocab = 4096

def get_inputs():
    return [torch.randn(batch, vocab) * 3]

def get_init_inputs():
    return [0.9]
