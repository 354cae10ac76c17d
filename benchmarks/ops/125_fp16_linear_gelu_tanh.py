import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A half-precision MLP up-projection: fp16 linear with bias and the tanh-approximated GELU,
    as in GPT-2's MLP, on fp16 activations."""
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc = nn.Linear(dim, hidden).half()

    def forward(self, x):
        return F.gelu(self.fc(x), approximate="tanh")

tokens = 4096
dim = 1024
hidden = 4096

def get_inputs():
    return [torch.randn(tokens, dim, dtype=torch.float16)]

def get_init_inputs():
    return [dim, hidden]
