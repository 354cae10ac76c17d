import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A GATv2 graph attention layer (Brody et al.; PyG's GATv2Conv with concatenated heads and
    self-loops) on a sparse graph given as an int64 edge list (2, edges): source nodes in row
    0, target nodes in row 1, duplicates allowed. One self-loop per node is appended (an arange
    over the node count, read from the features). Two Linear maps give the source-side and
    target-side features, gathered per edge by index_select and viewed as (heads, channels);
    the per-head score is att . LeakyReLU_0.2(W_l x_src + W_r x_dst). The softmax over each
    target's incoming edges is a segment softmax: the per-target maximum by scatter_reduce
    with amax (include_self=False), exp of the scores minus the gathered maximum, the
    per-target sums by index_add_, and a division by the gathered sums. The messages
    alpha * W_l x_src are summed onto the targets by index_add_, heads concatenated, a bias
    added and ELU applied. Returns the node features (nodes, heads * channels) and the
    attention coefficients (edges + nodes, heads)."""
    def __init__(self, in_dim, heads, channels):
        super().__init__()
        self.heads, self.channels = heads, channels
        self.lin_l = nn.Linear(in_dim, heads * channels)
        self.lin_r = nn.Linear(in_dim, heads * channels)
        self.att = nn.Parameter(torch.randn(heads, channels) * channels ** -0.5)
        self.bias = nn.Parameter(0.02 * torch.randn(heads * channels))

    def forward(self, x, edge_index):
        n = x.shape[0]
        h, c = self.heads, self.channels
        loops = torch.arange(n, device=x.device)
        src = torch.cat([edge_index[0], loops])
        dst = torch.cat([edge_index[1], loops])
        xl = self.lin_l(x).view(n, h, c)
        xr = self.lin_r(x).view(n, h, c)
        xj = xl.index_select(0, src)
        e = F.leaky_relu(xj + xr.index_select(0, dst), 0.2)
        score = (e * self.att).sum(dim=-1)                                   # (E + n, h)
        idx = dst.unsqueeze(-1).expand(-1, h)
        smax = score.new_empty(n, h).scatter_reduce(0, idx, score, reduce="amax", include_self=False)
        ex = torch.exp(score - smax.index_select(0, dst))
        denom = score.new_zeros(n, h).index_add_(0, dst, ex)
        alpha = ex / denom.index_select(0, dst)
        out = x.new_zeros(n, h, c).index_add_(0, dst, xj * alpha.unsqueeze(-1))
        return F.elu(out.view(n, h * c) + self.bias), alpha

nodes = 32768
edges = 262144
in_dim = 128
heads = 4
channels = 32

def get_inputs():
    x = torch.randn(nodes, in_dim)
    # a skewed degree distribution: a few hub targets, many low-degree nodes
    dst = (torch.rand(edges) ** 2 * nodes).long()
    src = torch.randint(0, nodes, (edges,))
    return [x, torch.stack([src, dst])]

def get_init_inputs():
    return [in_dim, heads, channels]
