import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Mamba-2's state-space duality (SSD) scan in chunked form, as run at prefill: the step
    sizes dt pass through softplus with a learned bias, the per-head decay is A = -exp(A_log),
    the sequence is zero-padded to a whole number of chunks (ceil(seqlen / chunk_len), computed
    in the forward) and unflattened into chunks. Inside a chunk the output is a masked
    quadratic form (C B^T times exp of the segment sums of dt * A, the upper triangle masked
    to -inf before exp); each chunk's final state is a decay-weighted sum of B x; the states
    are carried across chunks by the same segment-sum trick over the chunk totals; the carried
    states are read out with C. A skip D * x is added and the padding cut off. Returns the
    output (batch, seqlen, heads, head_dim) and the final state (batch, heads, head_dim,
    d_state)."""
    def __init__(self, heads, chunk_len):
        super().__init__()
        self.chunk_len = chunk_len
        self.A_log = nn.Parameter(torch.log(torch.rand(heads) * 15.0 + 1.0))
        dt = torch.exp(torch.rand(heads) * (torch.log(torch.tensor(0.1)) - torch.log(torch.tensor(0.001)))
                       + torch.log(torch.tensor(0.001)))
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))
        self.D = nn.Parameter(torch.ones(heads))

    @staticmethod
    def _segsum_exp(cs):
        # exp(cs[i] - cs[j]) for j <= i, zero above the diagonal
        n = cs.shape[-1]
        seg = cs.unsqueeze(-1) - cs.unsqueeze(-2)
        keep = torch.arange(n, device=cs.device)[:, None] >= torch.arange(n, device=cs.device)[None, :]
        return torch.exp(seg.masked_fill(~keep, float("-inf")))

    def forward(self, x, dt, B, C):
        b, seqlen, h, p = x.shape
        q = self.chunk_len
        nc = (seqlen + q - 1) // q
        pad = nc * q - seqlen
        dt = F.softplus(dt + self.dt_bias)
        A = -torch.exp(self.A_log)
        xd = F.pad(x * dt.unsqueeze(-1), (0, 0, 0, 0, 0, pad)).unflatten(1, (nc, q))
        dA = F.pad(dt * A, (0, 0, 0, pad)).unflatten(1, (nc, q)).permute(0, 3, 1, 2)
        Bc = F.pad(B, (0, 0, 0, pad)).unflatten(1, (nc, q))
        Cc = F.pad(C, (0, 0, 0, pad)).unflatten(1, (nc, q))
        cs = torch.cumsum(dA, dim=-1)                                   # (b, h, c, q)
        # within each chunk
        decay = self._segsum_exp(cs)                                    # (b, h, c, q, q)
        cb = torch.einsum("bcln,bcsn->bcls", Cc, Bc)                    # (b, c, q, q)
        w = cb.unsqueeze(1) * decay                                     # (b, h, c, q, q)
        y_diag = torch.einsum("bhcls,bcshp->bclhp", w, xd)
        # state at the end of each chunk
        to_end = torch.exp(cs[..., -1:] - cs)                           # (b, h, c, q)
        states = torch.einsum("bcln,bhcl,bclhp->bchpn", Bc, to_end, xd)
        # carry states across chunks
        states = torch.cat([torch.zeros_like(states[:, :1]), states], dim=1)
        totals = torch.cumsum(F.pad(cs[..., -1], (1, 0)), dim=-1)         # (b, h, c+1)
        chunk_decay = self._segsum_exp(totals)                          # (b, h, c+1, c+1)
        carried = torch.einsum("bhzc,bchpn->bzhpn", chunk_decay, states)
        states, final_state = carried[:, :-1], carried[:, -1]
        y_off = torch.einsum("bcln,bchpn,bhcl->bclhp", Cc, states, torch.exp(cs))
        y = (y_diag + y_off).flatten(1, 2)[:, :seqlen] + x * self.D[:, None]
        return y, final_state

batch = 4
seqlen = 1024
heads = 24
head_dim = 64
d_state = 128
chunk_len = 64

def get_inputs():
    x = torch.randn(batch, seqlen, heads, head_dim)
    dt = torch.randn(batch, seqlen, heads) * 0.5
    B = torch.randn(batch, seqlen, d_state) / d_state ** 0.5
    C = torch.randn(batch, seqlen, d_state) / d_state ** 0.5
    return [x, dt, B, C]

def get_init_inputs():
    return [heads, chunk_len]
