import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """The "outgoing edges" triangle multiplicative update of the AlphaFold 3 pairformer
    (Algorithm 12 of the AF3 supplement; Boltz-1 / Chai-1 / OpenFold3 TriangleMultiplication
    Outgoing), on a padded batch of complexes, returning the update (the caller adds it to z).

    Inputs: z fp32 (batch, tokens, tokens, c_z), the pair representation; token_mask bool
    (batch, tokens), True for real tokens (every complex has at least one).
    1. pair_mask = token_mask[:, :, None] & token_mask[:, None, :] (batch, tokens, tokens), as
       fp32.
    2. zn = LayerNorm(z) over c_z (learned weight and bias, eps 1e-5).
    3. a = sigmoid(zn @ Wag^T) * (zn @ Wap^T) * pair_mask[..., None] and
       b = sigmoid(zn @ Wbg^T) * (zn @ Wbp^T) * pair_mask[..., None], each
       (batch, tokens, tokens, c_hidden) (bias-free Linear c_z -> c_hidden);
       g = sigmoid(zn @ Wg^T) (batch, tokens, tokens, c_z) (bias-free Linear c_z -> c_z).
    4. Outgoing contraction over the third token k for every channel c:
       t[b, i, j, c] = sum_k a[b, i, k, c] * b[b, j, k, c]   (batch, tokens, tokens, c_hidden).
    5. update = g * (LayerNorm(t) @ Wo^T), LayerNorm over c_hidden (learned weight and bias,
       eps 1e-5) and Wo a bias-free Linear c_hidden -> c_z.
    Returns update fp32 (batch, tokens, tokens, c_z). Padded rows and columns are not zeroed
    (they are masked later by the caller); only a and b are masked."""
    def __init__(self, c_z, c_hidden):
        super().__init__()
        self.norm_in = nn.LayerNorm(c_z, eps=1e-5)
        self.norm_out = nn.LayerNorm(c_hidden, eps=1e-5)
        with torch.no_grad():
            for ln in (self.norm_in, self.norm_out):
                ln.weight.copy_(1.0 + 0.1 * torch.randn_like(ln.weight))
                ln.bias.copy_(0.1 * torch.randn_like(ln.bias))
        self.a_gate = nn.Linear(c_z, c_hidden, bias=False)
        self.a_proj = nn.Linear(c_z, c_hidden, bias=False)
        self.b_gate = nn.Linear(c_z, c_hidden, bias=False)
        self.b_proj = nn.Linear(c_z, c_hidden, bias=False)
        self.g = nn.Linear(c_z, c_z, bias=False)
        self.out = nn.Linear(c_hidden, c_z, bias=False)

    def forward(self, z, token_mask):
        m = token_mask.to(z.dtype)
        pair_mask = (m[:, :, None] * m[:, None, :]).unsqueeze(-1)
        zn = self.norm_in(z)
        a = torch.sigmoid(self.a_gate(zn)) * self.a_proj(zn) * pair_mask
        b = torch.sigmoid(self.b_gate(zn)) * self.b_proj(zn) * pair_mask
        g = torch.sigmoid(self.g(zn))
        t = torch.einsum("bikc,bjkc->bijc", a, b)
        return g * self.out(self.norm_out(t))

batch = 2
tokens = 192
c_z = 128
c_hidden = 128

def get_inputs():
    # pair features of trunk-like scale: a smooth distance-like signal plus noise
    pos = torch.cumsum(torch.randn(batch, tokens, 3) * 1.5, dim=1)
    dist = torch.cdist(pos, pos)
    freqs = torch.linspace(0.05, 2.0, c_z)
    z = torch.sin(dist.unsqueeze(-1) * freqs) + 0.5 * torch.randn(batch, tokens, tokens, c_z)
    lengths = torch.randint(1, tokens + 1, (batch,))
    lengths[0] = tokens
    token_mask = torch.arange(tokens).unsqueeze(0) < lengths.unsqueeze(1)
    return [z, token_mask]

def get_init_inputs():
    return [c_z, c_hidden]
