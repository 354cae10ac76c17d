import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Bilinear: y_k = x1^T W_k x2 + b_k for every output feature k, then tanh."""
    def __init__(self, in1, in2, out):
        super().__init__()
        self.bilinear = nn.Bilinear(in1, in2, out)

    def forward(self, x1, x2):
        return torch.tanh(self.bilinear(x1, x2))

batch = 1024
in1 = 128
in2 = 96
out = 64

def get_inputs():
    return [torch.randn(batch, in1), torch.randn(batch, in2)]

def get_init_inputs():
    return [in1, in2, out]
