import torch
import torch.nn as nn


class Model(nn.Module):
    """A weight-only int4 linear layer (W4A16): two 4-bit weights packed in each uint8, unpacked
    with shifts and masks, shifted to signed, scaled per group of 128 input features, then a
    bf16 matrix product with the activations."""
    def __init__(self, in_features, out_features, group):
        super().__init__()
        self.group = group
        self.register_buffer("packed", torch.randint(0, 256, (out_features, in_features // 2), dtype=torch.uint8))
        self.register_buffer("scales", torch.rand(out_features, in_features // group, dtype=torch.bfloat16) * 0.02)

    def forward(self, x):
        low = (self.packed & 0xF).to(torch.int8) - 8
        high = (self.packed >> 4).to(torch.int8) - 8
        w = torch.stack([low, high], dim=-1).reshape(self.packed.shape[0], -1)
        w = w.reshape(w.shape[0], -1, self.group).to(torch.bfloat16) * self.scales[..., None]
        return x @ w.reshape(w.shape[0], -1).t()

tokens = 2048
in_features = 4096
out_features = 4096
group = 128

def get_inputs():
    return [torch.randn(tokens, in_features, dtype=torch.bfloat16)]

def get_init_inputs():
    return [in_features, out_features, group]
