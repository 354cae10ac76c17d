import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A vocoder upsampling step: ConvTranspose1d with stride 2, then a GLU over the channels."""
    def __init__(self, cin, cout, kernel):
        super().__init__()
        self.up = nn.ConvTranspose1d(cin, 2 * cout, kernel, stride=2, padding=(kernel - 2) // 2)

    def forward(self, x):
        return F.glu(self.up(x), dim=1)

batch = 16
cin = 256
cout = 128
kernel = 4
length = 4096

def get_inputs():
    return [torch.randn(batch, cin, length)]

def get_init_inputs():
    return [cin, cout, kernel]
