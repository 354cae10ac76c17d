import torch
import torch.nn as nn


class Model(nn.Module):
    """ViT patch embedding: a strided convolution cuts the image into patches, the patches
    become tokens, a learned position embedding is added, then LayerNorm."""
    def __init__(self, channels, dim, patch, tokens):
        super().__init__()
        self.proj = nn.Conv2d(channels, dim, kernel_size=patch, stride=patch)
        self.pos = nn.Parameter(torch.randn(1, tokens, dim) * 0.02)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        t = self.proj(x).flatten(2).transpose(1, 2)
        return self.norm(t + self.pos)

batch = 32
channels = 3
dim = 768
patch = 16
image = 224
tokens = (image // patch) ** 2

def get_inputs():
    return [torch.randn(batch, channels, image, image)]

def get_init_inputs():
    return [channels, dim, patch, tokens]
