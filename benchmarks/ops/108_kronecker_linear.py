import torch
import torch.nn as nn


class Model(nn.Module):
    """A Kronecker-factored linear layer: the weight is torch.kron of two small learned
    factors, applied to the activations."""
    def __init__(self, a_out, a_in, b_out, b_in):
        super().__init__()
        self.a = nn.Parameter(torch.randn(a_out, a_in) / a_in ** 0.5)
        self.b = nn.Parameter(torch.randn(b_out, b_in) / b_in ** 0.5)

    def forward(self, x):
        return x @ torch.kron(self.a, self.b).t()

tokens = 4096
a_out = 32
a_in = 32
b_out = 64
b_in = 64

def get_inputs():
    return [torch.randn(tokens, a_in * b_in)]

def get_init_inputs():
    return [a_out, a_in, b_out, b_in]
