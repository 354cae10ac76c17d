import torch
import torch.nn as nn


class Model(nn.Module):
    """A pre-norm transformer encoder layer as PyTorch ships it (GELU feed-forward, no dropout)."""
    def __init__(self, dim, heads, ff):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(dim, heads, ff, dropout=0.0, activation="gelu",
                                                batch_first=True, norm_first=True)

    def forward(self, x):
        return self.layer(x)

batch = 8
seq = 256
dim = 512
heads = 8
ff = 2048

def get_inputs():
    return [torch.randn(batch, seq, dim)]

def get_init_inputs():
    return [dim, heads, ff]
