import torch
import torch.nn as nn


class Model(nn.Module):
    """AlphaFold2's distogram loss (supplement 1.9.8). logits are bf16 (batch, res, res, bins)
    with bins = 64; pseudo_beta is fp32 (batch, res, 3) (C-beta, C-alpha for glycine); mask is
    fp32 (batch, res) with 1 for resolved residues. The 63 bin boundaries are linspace(2.3125,
    21.6875, 63) Angstrom; a pair's true bin is the number of squared boundaries strictly below
    its squared distance ||p_i - p_j||^2 (an int64 in [0, 63]). The per-pair error is the
    cross-entropy -log_softmax(logits.float())[true bin], the pair mask is mask_i * mask_j, and
    each sample's loss is sum(error * pair mask) / (1e-6 + sum(pair mask)). Returns the loss (mean
    over the batch, 0-d fp32), the per-sample losses fp32 (batch,) and the true bins int64
    (batch, res, res)."""
    def __init__(self, bins, min_bin, max_bin):
        super().__init__()
        self.register_buffer("sq_breaks", torch.linspace(min_bin, max_bin, bins - 1) ** 2)

    def forward(self, logits, pseudo_beta, mask):
        d2 = (pseudo_beta.unsqueeze(2) - pseudo_beta.unsqueeze(1)).pow(2).sum(-1)      # (b, r, r)
        true_bins = (d2.unsqueeze(-1) > self.sq_breaks).sum(-1)
        logp = torch.log_softmax(logits.float(), dim=-1)
        errors = -logp.gather(-1, true_bins.unsqueeze(-1)).squeeze(-1)
        pair_mask = mask.unsqueeze(2) * mask.unsqueeze(1)
        per_sample = (errors * pair_mask).sum((-2, -1)) / (1e-6 + pair_mask.sum((-2, -1)))
        return per_sample.mean(), per_sample, true_bins

batch = 2
res = 512
bins = 64
min_bin = 2.3125
max_bin = 21.6875

def get_inputs():
    logits = torch.randn(batch, res, res, bins, dtype=torch.bfloat16)
    # a random walk with ~3.8 A steps, like a chain of C-alphas
    steps = torch.randn(batch, res, 3)
    pseudo_beta = torch.cumsum(3.8 * steps / steps.norm(dim=-1, keepdim=True), dim=1)
    mask = (torch.rand(batch, res) > 0.1).float()
    return [logits, pseudo_beta, mask]

def get_init_inputs():
    return [bins, min_bin, max_bin]
