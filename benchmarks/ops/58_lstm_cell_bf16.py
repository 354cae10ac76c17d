import torch
import torch.nn as nn


class Model(nn.Module):
    """One LSTM cell step in bfloat16."""

    def __init__(self, inputs: int, hidden: int):
        super().__init__()
        self.cell = nn.LSTMCell(inputs, hidden).to(torch.bfloat16)

    def forward(self, x, h, c):
        return self.cell(x, (h, c))


batch, inputs, hidden = 256, 512, 512


def get_inputs():
    return [torch.randn(batch, inputs, dtype=torch.bfloat16), torch.randn(batch, hidden, dtype=torch.bfloat16), torch.randn(batch, hidden, dtype=torch.bfloat16)]


def get_init_inputs():
    return [inputs, hidden]
