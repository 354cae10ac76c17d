import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A Hyena operator of order 2 (Poli et al. 2023, safari's HyenaOperator) with its implicit
    long filter, the long convolution written as an explicit causal depthwise conv1d. u is bf16
    (batch, seq, d_model). A bf16 Linear (d_model -> 3 d_model, with bias) projects u; the result
    (laid out (batch, 3 d_model, seq)) goes through a causal depthwise short conv1d of kernel 3
    (left padding 2, with bias) and is split into x1, x2, v of d_model channels each. The long
    filter h (d_model, seq) is computed in fp32 from positions: t = linspace(0, 1, seq), w = 2 pi
    arange(seq) / seq, f = linspace(1e-4, bands - 1, bands) with bands = (emb_dim - 1) // 2 = 1,
    z = [t, cos(f w), -sin(f w)] (seq, emb_dim = 3); the filter MLP is Linear(3, order=64),
    sin(freq * .), Linear(64, 64), sin(freq * .), Linear(64, d_model, no bias), with a learned
    per-unit freq (init 1) shared by both sin layers; it is multiplied by the exponential decay
    exp(-t * |delta_c|) with delta = linspace(log(1e-2) / 1.5, log(1e-2) / 0.3, d_model). Then
    v = v * x2 (fp32), y_c[i] = sum_{j <= i} h_c[i - j] v_c[j] + bias_c v_c[i] (a learned
    per-channel fp32 bias; the sum is conv1d with the flipped filter, padding seq - 1, groups =
    d_model, first seq outputs kept), y = y * x1, and a bf16 Linear (d_model -> d_model, with
    bias) projects y (cast to bf16) back. Returns bf16 (batch, seq, d_model)."""
    def __init__(self, d_model, seq, filter_order=64, emb_dim=3):
        super().__init__()
        self.d_model, self.seq = d_model, seq
        self.in_proj = nn.Linear(d_model, 3 * d_model).to(torch.bfloat16)
        self.short_conv = nn.Conv1d(3 * d_model, 3 * d_model, 3, groups=3 * d_model).to(torch.bfloat16)
        self.out_proj = nn.Linear(d_model, d_model).to(torch.bfloat16)
        bands = (emb_dim - 1) // 2
        t = torch.linspace(0, 1, seq).unsqueeze(-1)
        w = 2 * math.pi * torch.arange(seq).float().unsqueeze(-1) / seq
        f = torch.linspace(1e-4, bands - 1, bands).unsqueeze(0)
        self.register_buffer("z", torch.cat([t, torch.cos(f * w), -torch.sin(f * w)], dim=-1))
        self.register_buffer("t", t)
        self.register_buffer("deltas", torch.linspace(math.log(1e-2) / 1.5, math.log(1e-2) / 0.3, d_model))
        self.fc1 = nn.Linear(emb_dim, filter_order)
        self.fc2 = nn.Linear(filter_order, filter_order)
        self.fc3 = nn.Linear(filter_order, d_model, bias=False)
        self.freq = nn.Parameter(torch.ones(filter_order))
        self.bias = nn.Parameter(torch.randn(d_model))

    def forward(self, u):
        b, l, d = u.shape
        x = self.in_proj(u).transpose(1, 2)                              # (b, 3d, l)
        x = self.short_conv(F.pad(x, (2, 0)))
        x1, x2, v = x.float().split(d, dim=1)
        h = torch.sin(self.freq * self.fc1(self.z))
        h = torch.sin(self.freq * self.fc2(h))
        h = self.fc3(h) * torch.exp(-self.t * self.deltas.abs())         # (l, d)
        h = h.t().unsqueeze(1).flip(-1)                                  # (d, 1, l)
        v = v * x2
        y = F.conv1d(v, h, padding=l - 1, groups=d)[..., :l] + self.bias.view(1, d, 1) * v
        y = y * x1
        return self.out_proj(y.transpose(1, 2).to(torch.bfloat16))

batch = 8
seq = 2048
d_model = 768

def get_inputs():
    return [torch.randn(batch, seq, d_model, dtype=torch.bfloat16)]

def get_init_inputs():
    return [d_model, seq]
