import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """DGCNN's EdgeConv on a point cloud (channels-first features, batch x channels x points):
    the k nearest neighbours of every point in feature space (negative squared distances from
    one batched matmul and the squared norms, then topk; k is capped at the point count in
    the forward), neighbour features fetched with index_select on the flattened (batch *
    points) rows after adding a per-cloud offset to the indices, edge features [x_j - x_i,
    x_i] formed against the expanded centre point, a shared bias-free linear map (the 1x1
    Conv2d), batch norm with running statistics, LeakyReLU(0.2) and a max over the
    neighbours. Returns the new features (batch x out_channels x points) and the neighbour
    indices (int64) for the next layer."""
    def __init__(self, in_channels, out_channels, k):
        super().__init__()
        self.k = k
        self.weight = nn.Parameter(torch.randn(out_channels, 2 * in_channels) / (2 * in_channels) ** 0.5)
        self.bn_weight = nn.Parameter(torch.rand(out_channels) + 0.5)
        self.bn_bias = nn.Parameter(torch.randn(out_channels) * 0.1)
        self.register_buffer("running_mean", torch.randn(out_channels) * 0.1)
        self.register_buffer("running_var", torch.rand(out_channels) + 0.5)

    def forward(self, x):
        b, c, n = x.shape
        k = min(self.k, n)
        xt = x.transpose(1, 2)
        sq = x.pow(2).sum(dim=1, keepdim=True)
        neg_dist = 2.0 * torch.bmm(xt, x) - sq - sq.transpose(1, 2)
        idx = neg_dist.topk(k, dim=-1).indices
        flat = (idx + torch.arange(b, device=x.device).view(-1, 1, 1) * n).reshape(-1)
        nbr = xt.reshape(b * n, c).index_select(0, flat).view(b, n, k, c)
        center = xt.unsqueeze(2).expand(-1, -1, k, -1)
        edge = torch.cat([nbr - center, center], dim=-1)
        h = edge @ self.weight.t()
        h = (h - self.running_mean) * torch.rsqrt(self.running_var + 1e-5) * self.bn_weight + self.bn_bias
        h = F.leaky_relu(h, 0.2)
        return h.amax(dim=2).transpose(1, 2), idx

batch = 32
points = 1024
in_channels = 64
out_channels = 64
k = 20

def get_inputs():
    return [torch.randn(batch, in_channels, points)]

def get_init_inputs():
    return [in_channels, out_channels, k]
