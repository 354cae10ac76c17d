import torch
import torch.nn as nn


class Model(nn.Module):
    """A one-layer GRU over a whole sequence (nn.GRU, batch first): every step's hidden state
    and the last one."""
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.gru = nn.GRU(input_size, hidden_size, batch_first=True)

    def forward(self, x, h0):
        out, h = self.gru(x, h0)
        return out, h

batch = 64
steps = 128
input_size = 256
hidden_size = 256

def get_inputs():
    return [torch.randn(batch, steps, input_size), torch.randn(1, batch, hidden_size)]

def get_init_inputs():
    return [input_size, hidden_size]
