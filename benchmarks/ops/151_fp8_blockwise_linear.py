import torch
import torch.nn as nn


class Model(nn.Module):
    """A DeepSeek-V3-style FP8 linear layer with fine-grained scaling, the float8 e4m3 format
    emulated in fp32. The bf16 activations (tokens, in) get one scale per 1 x block tile and the
    fp32 master weight (out, in) one scale per block x block tile, each scale being the tile's
    absolute maximum (clamped below at 1e-4) over 448, the largest e4m3 value. Values divided
    by their scale are rounded to e4m3: torch.frexp gives the binary exponent e, clamped below
    at -5 (the subnormal range), the spacing is 2^(e - 4) (three mantissa bits) built by
    torch.ldexp, the value is rounded half-to-even to a multiple of it and clamped to
    [-448, 448]. The dequantised activations and weight (values times their scales) are
    multiplied in fp32 (y = x W^T, no bias) and the product returned in bf16, together with the
    fp32 activation scales (tokens, in / block) that a backward pass would reuse."""
    def __init__(self, in_features, out_features, block):
        super().__init__()
        self.block = block
        self.weight = nn.Parameter(torch.randn(out_features, in_features) * in_features ** -0.5)

    @staticmethod
    def _round_e4m3(v):
        _, e = torch.frexp(v)
        step = torch.ldexp(torch.ones_like(v), torch.clamp(e, min=-5) - 4)
        return torch.clamp(torch.round(v / step) * step, -448.0, 448.0)

    def forward(self, x):
        t, k = x.shape
        o = self.weight.shape[0]
        bs = self.block
        xf = x.float().view(t, k // bs, bs)
        sx = xf.abs().amax(dim=-1, keepdim=True).clamp(min=1e-4) / 448.0
        xq = self._round_e4m3(xf / sx) * sx
        w = self.weight.float().view(o // bs, bs, k // bs, bs)
        sw = w.abs().amax(dim=(1, 3), keepdim=True).clamp(min=1e-4) / 448.0
        wq = self._round_e4m3(w / sw) * sw
        y = xq.view(t, k) @ wq.view(o, k).t()
        return y.to(x.dtype), sx.squeeze(-1)

tokens = 4096
in_features = 2048
out_features = 4096
block = 128

def get_inputs():
    # activations with a few outlier channels, as LLM activations have
    x = torch.randn(tokens, in_features)
    x[:, torch.randperm(in_features)[:16]] *= 20.0
    return [x.to(torch.bfloat16)]

def get_init_inputs():
    return [in_features, out_features, block]
