import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A ViT-VQGAN / improved-VQGAN vector quantiser with a factorised, L2-normalised codebook,
    on an encoder's feature map. z is fp32 (batch, channels, height, width); its pixels become
    tokens (permute to channels-last, flatten to (batch * height * width, channels)). A Linear
    (channels -> code_dim, with bias) projects each token to the low-dimensional lookup space,
    and both the projected tokens and the codebook (codes, code_dim) are L2-normalised
    (F.normalize). Squared distances are ||z||^2 + ||e||^2 - 2 z e^T (a (tokens, codes) fp32
    matrix), and each token takes the code at the argmin (first index on ties). The quantiser
    losses are the usual two MSE terms on the normalised vectors: beta * mse(z, e.detach())
    (commitment, beta = 0.25 by default) + mse(e, z.detach()) (codebook). The straight-through
    estimate z + (e - z).detach() is projected back by a Linear (code_dim -> channels, with
    bias) and laid out again as (batch, channels, height, width). The code usage perplexity is
    exp(-sum p log(p + 1e-10)) with p the code frequencies (bincount over the chosen indices,
    minlength codes, divided by the token count). Returns the quantised features fp32 (batch,
    channels, height, width), the code indices int64 (batch, height, width), the loss and the
    perplexity (0-d fp32)."""
    def __init__(self, channels, code_dim, codes, beta):
        super().__init__()
        self.codes, self.beta = codes, beta
        self.proj_in = nn.Linear(channels, code_dim)
        self.proj_out = nn.Linear(code_dim, channels)
        self.codebook = nn.Parameter(torch.randn(codes, code_dim))

    def forward(self, z):
        b, c, h, w = z.shape
        tokens = z.permute(0, 2, 3, 1).reshape(-1, c)
        ze = F.normalize(self.proj_in(tokens), dim=-1)
        e = F.normalize(self.codebook, dim=-1)
        dist = ze.pow(2).sum(-1, keepdim=True) + e.pow(2).sum(-1) - 2.0 * ze @ e.t()
        idx = dist.argmin(dim=-1)
        zq = e[idx]
        loss = self.beta * F.mse_loss(ze, zq.detach()) + F.mse_loss(zq, ze.detach())
        zq = ze + (zq - ze).detach()
        out = self.proj_out(zq).view(b, h, w, c).permute(0, 3, 1, 2)
        p = torch.bincount(idx, minlength=self.codes).float() / idx.numel()
        perplexity = torch.exp(-(p * torch.log(p + 1e-10)).sum())
        return out, idx.view(b, h, w), loss, perplexity

batch = 8
channels = 256
height = 64
width = 64
code_dim = 32
codes = 8192
beta = 0.25

def get_inputs():
    return [torch.randn(batch, channels, height, width)]

def get_init_inputs():
    return [channels, code_dim, codes, beta]
