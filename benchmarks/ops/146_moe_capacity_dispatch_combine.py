import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A GShard/Switch-style mixture-of-experts layer with a fixed expert capacity and dropped
    tokens, given the router's logits. Each token picks its top-k experts by topk on the fp32
    logits, with gate weights from a softmax over the k chosen logits (Mixtral style). The
    capacity is ceil(tokens * k * capacity_factor / experts), computed in the forward from the
    shapes. Slots are handed out with all first choices before any second choice, in token
    order: the choices are flattened k-major, one-hot encoded, and a cumulative sum over that
    order gives each choice its position inside its expert; choices at or past the capacity are
    dropped and sent to one spare overflow row. Kept tokens are written into an
    (experts * capacity + 1) x dim buffer by index_add_ at expert * capacity + position; every
    expert runs its GELU MLP (biases included) on its capacity rows through baddbmm; the
    results are read back per choice by indexing with the same slots (the overflow row reads
    zeros), weighted by the gate times the kept flag, and summed over the k choices. A token
    whose choices are all dropped gets zeros. Returns the output (batch, seq, dim), the Switch
    load-balancing loss (experts * sum of first-choice fraction times mean router probability),
    the ST-MoE router z-loss (mean squared logsumexp of the logits) and the fraction of dropped
    choices."""
    def __init__(self, dim, ffn, experts, top_k, capacity_factor):
        super().__init__()
        self.experts, self.top_k, self.capacity_factor = experts, top_k, capacity_factor
        self.w1 = nn.Parameter(torch.randn(experts, dim, ffn) * dim ** -0.5)
        self.b1 = nn.Parameter(0.02 * torch.randn(experts, 1, ffn))
        self.w2 = nn.Parameter(torch.randn(experts, ffn, dim) * ffn ** -0.5)
        self.b2 = nn.Parameter(0.02 * torch.randn(experts, 1, dim))

    def forward(self, x, router_logits):
        b, s, d = x.shape
        e, k = self.experts, self.top_k
        tokens = x.reshape(-1, d)
        logits = router_logits.reshape(-1, e).float()
        n = tokens.shape[0]
        capacity = math.ceil(n * k * self.capacity_factor / e)
        top_logits, top_idx = logits.topk(k, dim=-1)                    # (n, k)
        gates = torch.softmax(top_logits, dim=-1)
        choice = top_idx.t().reshape(-1)                                # (k * n,), k-major
        onehot = F.one_hot(choice, e)
        pos = (torch.cumsum(onehot, dim=0) * onehot).sum(dim=-1) - 1
        keep = pos < capacity
        slot = torch.where(keep, choice * capacity + pos, e * capacity)
        src = tokens.repeat(k, 1)
        buf = tokens.new_zeros(e * capacity + 1, d).index_add_(0, slot, src)
        h = F.gelu(torch.baddbmm(self.b1, buf[:-1].view(e, capacity, d), self.w1))
        out = torch.baddbmm(self.b2, h, self.w2).view(e * capacity, d)
        out = torch.cat([out, out.new_zeros(1, d)], dim=0)
        weight = (gates.t().reshape(-1) * keep).to(out.dtype)
        y = (out[slot] * weight.unsqueeze(-1)).view(k, n, d).sum(dim=0)
        probs = torch.softmax(logits, dim=-1)
        first = torch.bincount(top_idx[:, 0], minlength=e).float() / n
        aux_loss = e * torch.sum(first * probs.mean(dim=0))
        z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
        dropped = 1.0 - keep.float().mean()
        return y.view(b, s, d), aux_loss, z_loss, dropped

batch = 4
seq = 1024
dim = 512
ffn = 1024
experts = 8
top_k = 2
capacity_factor = 1.25

def get_inputs():
    x = torch.randn(batch, seq, dim)
    # a skewed router: the popular experts overflow their capacity
    bias = torch.linspace(-0.5, 0.5, experts)
    router_logits = torch.randn(batch, seq, experts) + bias
    return [x, router_logits]

def get_init_inputs():
    return [dim, ffn, experts, top_k, capacity_factor]
