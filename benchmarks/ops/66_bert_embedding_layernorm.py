import torch
import torch.nn as nn


class Model(nn.Module):
    """Token embedding plus learned positions, then LayerNorm (a BERT embedding layer)."""
    def __init__(self, vocab, max_len, dim):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1], device=ids.device)
        return self.norm(self.tok(ids) + self.pos(positions)[None])

batch_size = 32
seq = 512
vocab = 30522
max_len = 512
dim = 768

def get_inputs():
    return [torch.randint(0, vocab, (batch_size, seq))]

def get_init_inputs():
    return [vocab, max_len, dim]
