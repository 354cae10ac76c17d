import torch
import torch.nn as nn


class Model(nn.Module):
    """TabNet's attentive transformer: a bias-free linear layer, ghost batch normalisation
    (the batch chunked into ceil(batch / virtual_batch) virtual batches, each normalised by its
    own mean and population variance, affine, concatenated back; running statistics not
    kept; a virtual batch of one sample gives the bias), multiplied by the prior, then
    sparsemax over the features (sort descending, cumulative sum, support size counted from a
    comparison with arange, threshold gathered at it). Returns the feature mask, the updated
    prior prior * (gamma - mask) and the masked features."""
    def __init__(self, n_a, input_dim, virtual_batch, gamma):
        super().__init__()
        self.fc = nn.Linear(n_a, input_dim, bias=False)
        self.bn_weight = nn.Parameter(torch.ones(input_dim))
        self.bn_bias = nn.Parameter(torch.zeros(input_dim))
        self.virtual_batch = virtual_batch
        self.gamma = gamma

    def forward(self, a, prior, x):
        h = self.fc(a)
        parts = []
        for c in h.chunk(-(-h.shape[0] // self.virtual_batch), dim=0):
            mean = c.mean(0, keepdim=True)
            var = c.var(0, correction=0, keepdim=True)
            parts.append((c - mean) / torch.sqrt(var + 1e-5) * self.bn_weight + self.bn_bias)
        z = torch.cat(parts, dim=0) * prior
        zs = torch.sort(z, dim=-1, descending=True).values
        cs = zs.cumsum(dim=-1) - 1.0
        rank = torch.arange(1, z.shape[-1] + 1, device=z.device, dtype=z.dtype)
        support = (rank * zs > cs).sum(dim=-1, keepdim=True)
        tau = cs.gather(-1, support - 1) / support.to(z.dtype)
        mask = (z - tau).clamp(min=0)
        return mask, prior * (self.gamma - mask), mask * x

batch = 16384
n_a = 64
input_dim = 256
virtual_batch = 128
gamma = 1.3

def get_inputs():
    return [torch.randn(batch, n_a), torch.rand(batch, input_dim) + 0.5, torch.randn(batch, input_dim)]

def get_init_inputs():
    return [n_a, input_dim, virtual_batch, gamma]
