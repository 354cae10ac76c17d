import math

import torch
import torch.nn as nn


class Model(nn.Module):
    """Token Merging's bipartite soft matching with a size-weighted average (Bolya et al. 2023,
    facebookresearch/ToMe's bipartite_soft_matching and merge_wavg), as run between the
    attention and the MLP of a ViT block, with the class token protected.

    Inputs: x fp32 (batch, tokens, dim) the tokens, token 0 the class token; metric fp32
    (batch, tokens, head_dim) the attention keys averaged over the heads; size fp32 (batch,
    tokens, 1) how many original patches each token already stands for. r (a constructor
    argument) is the number of tokens removed. Steps:
    1. metric is L2-normalised over its last dim; set A = the even-indexed tokens (0, 2, 4,
       ...), set B = the odd-indexed ones; scores = A B^T (batch, ceil(tokens / 2),
       floor(tokens / 2)), cosine similarities; row 0 of scores (the class token) is set to
       -inf.
    2. node_max, node_idx = max over B of scores (value and index of each A token's best
       match); edge order = argsort of node_max, descending. The first r A tokens in that order
       are merged (src), the rest stay (unm); dst = node_idx of each src token, gathered. The
       unm indices are sorted ascending (so the class token stays first).
    3. merge(t) for a tensor t (batch, tokens, c): split into even rows (A) and odd rows (B);
       unm rows of A by gather, src rows of A by gather (in edge order), and B with the src
       rows added into their dst rows by scatter_reduce "sum" (include_self); the result is
       cat([unm rows, B], dim 1), (batch, tokens - r, c).
    4. Weighted average: x_new = merge(x * size) / merge(size); size_new = merge(size).
    Returns x_new (batch, tokens - r, dim) and size_new (batch, tokens - r, 1)."""
    def __init__(self, r):
        super().__init__()
        self.r = r

    def forward(self, x, metric, size):
        r = self.r
        metric = metric / metric.norm(dim=-1, keepdim=True)
        a, b = metric[..., ::2, :], metric[..., 1::2, :]
        scores = a @ b.transpose(-1, -2)
        scores[..., 0, :] = -math.inf
        node_max, node_idx = scores.max(dim=-1)
        edge_idx = node_max.argsort(dim=-1, descending=True)[..., None]
        unm_idx = edge_idx[..., r:, :]
        src_idx = edge_idx[..., :r, :]
        dst_idx = node_idx[..., None].gather(dim=-2, index=src_idx)
        unm_idx = unm_idx.sort(dim=1)[0]

        def merge(t):
            src, dst = t[..., ::2, :], t[..., 1::2, :]
            n, t1, c = src.shape
            unm = src.gather(dim=-2, index=unm_idx.expand(n, t1 - r, c))
            src = src.gather(dim=-2, index=src_idx.expand(n, r, c))
            dst = dst.scatter_reduce(-2, dst_idx.expand(n, r, c), src, reduce="sum")
            return torch.cat([unm, dst], dim=1)

        x_sum = merge(x * size)
        size_new = merge(size)
        return x_sum / size_new, size_new

batch = 64
tokens = 577         # CLIP ViT-L/14 at 336 px: 24 x 24 patches and the class token
dim = 1024
head_dim = 64
r = 32

def get_inputs():
    # neighbouring patches share content, so their keys are close
    grid = torch.randn(batch, head_dim, 6, 6)
    smooth = torch.nn.functional.interpolate(grid, size=(24, 24), mode="bilinear", align_corners=False)
    keys = smooth.flatten(2).transpose(1, 2) + 0.3 * torch.randn(batch, 576, head_dim)
    metric = torch.cat([torch.randn(batch, 1, head_dim), keys], dim=1)
    x = torch.randn(batch, tokens, dim)
    size = torch.randint(1, 4, (batch, tokens, 1)).float()
    size[:, 0] = 1.0
    return [x, metric, size]

def get_init_inputs():
    return [r]
