import torch
import torch.nn as nn


class Model(nn.Module):
    """wav2vec 2.0's Gumbel-softmax product quantiser in training mode (as in fairseq's /
    Hugging Face's GumbelVectorQuantizer), with the Gumbel noise given as an input so that the
    forward is deterministic, and the code vectors combined by a batched product instead of a
    broadcast.

    Inputs: features (batch, frames, in_dim) fp32 (the CNN feature encoder's output), uniform
    (batch, frames, groups, num_vars) fp32 in the open interval (0, 1), and mask (batch,
    frames) bool, the time steps chosen for the contrastive task. Parameters: weight_proj, a
    Linear(in_dim, groups * num_vars) with bias, and codevectors (groups, num_vars, code_dim).

    logits = weight_proj(features) viewed as (batch * frames, groups, num_vars). The
    straight-through hard Gumbel-softmax over num_vars with temperature tau: noise
    g = -log(-log(uniform)), y_soft = softmax((logits + g) / tau), y_hard = one-hot of the
    argmax of y_soft (the first index on ties), and the weights are y_hard - y_soft + y_soft
    (evaluated in that order; it equals y_hard up to rounding). The code vector of each frame
    and group is sum_v weights[g, v] * codevectors[g, v] (a bmm per group); the groups are
    concatenated to (batch, frames, groups * code_dim). The perplexity uses the noise-free
    softmax p = softmax(logits) over num_vars: the marginal over the masked frames,
    m[g] = sum over masked frames of p / (number of masked frames), and perplexity =
    sum over groups of exp(-sum_v m log(m + 1e-7)). The diversity loss is
    (groups * num_vars - perplexity) / (groups * num_vars).

    Returns quantized (batch, frames, groups * code_dim) fp32, codes (batch, frames, groups)
    int64 (the argmax of y_soft), perplexity (0-d fp32) and diversity_loss (0-d fp32)."""
    def __init__(self, in_dim, groups, num_vars, code_dim, tau):
        super().__init__()
        self.groups, self.num_vars, self.tau = groups, num_vars, tau
        self.weight_proj = nn.Linear(in_dim, groups * num_vars)
        self.codevectors = nn.Parameter(torch.rand(groups, num_vars, code_dim))

    def forward(self, features, uniform, mask):
        b, t, _ = features.shape
        G, V = self.groups, self.num_vars
        logits = self.weight_proj(features).view(b * t, G, V)
        gumbel = -torch.log(-torch.log(uniform.view(b * t, G, V)))
        y_soft = torch.softmax((logits + gumbel) / self.tau, dim=-1)
        codes = y_soft.argmax(dim=-1)                                        # (bt, G)
        y_hard = torch.zeros_like(y_soft).scatter_(-1, codes.unsqueeze(-1), 1.0)
        weights = y_hard - y_soft.detach() + y_soft
        q = torch.bmm(weights.transpose(0, 1), self.codevectors)             # (G, bt, code_dim)
        quantized = q.transpose(0, 1).reshape(b, t, -1)
        probs = torch.softmax(logits, dim=-1)
        m = mask.reshape(-1, 1, 1)
        marginal = torch.where(m, probs, torch.zeros_like(probs)).sum(0) / mask.sum()
        perplexity = torch.exp(-torch.sum(marginal * torch.log(marginal + 1e-7), dim=-1)).sum()
        diversity_loss = (G * V - perplexity) / (G * V)
        return quantized, codes.view(b, t, G), perplexity, diversity_loss

batch = 32
frames = 1000
in_dim = 512
groups = 2
num_vars = 320
code_dim = 128
tau = 2.0

def get_inputs():
    features = torch.randn(batch, frames, in_dim)
    uniform = torch.rand(batch, frames, groups, num_vars).clamp_(1e-6, 1.0 - 1e-6)
    mask = torch.rand(batch, frames) < 0.5
    return [features, uniform, mask]

def get_init_inputs():
    return [in_dim, groups, num_vars, code_dim, tau]
