import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A language model's loss: hidden states projected to the vocabulary (no bias), then
    cross-entropy against the targets, padding positions (target -100) ignored."""
    def __init__(self, hidden, vocab):
        super().__init__()
        self.proj = nn.Linear(hidden, vocab, bias=False)

    def forward(self, h, targets):
        return F.cross_entropy(self.proj(h), targets, ignore_index=-100)

tokens = 2048
hidden = 1024
vocab = 32000

def get_inputs():
    targets = torch.randint(0, vocab, (tokens,))
    targets[::7] = -100
    return [torch.randn(tokens, hidden), targets]

def get_init_inputs():
    return [hidden, vocab]
