import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A PointNet++ multi-scale-grouping set abstraction layer (Qi et al. 2017; the widely used
    pure-PyTorch PointNetSetAbstractionMsg with its sort-based ball query), with the centroids'
    farthest-point-sampling indices given.

    Inputs: xyz fp32 (batch, points, 3); feats fp32 (batch, points, channels), per-point
    features (colour and normal); centroid_idx int64 (batch, centroids). Steps:
    1. new_xyz = xyz gathered at centroid_idx (batch, centroids, 3).
    2. sqd = squared distances between new_xyz and xyz, as -2 new_xyz xyz^T + |new_xyz|^2 +
       |xyz|^2 (batch, centroids, points). (The coordinates are multiples of 1/64 in the inputs,
       so any exact way of computing them agrees.)
    3. For each scale s (a fixed set of radius_s, nsample_s, and an MLP of widths), in order:
       a. Ball query: idx = arange(points) broadcast to (batch, centroids, points), replaced by
          points where sqd > radius_s^2; sorted ascending along the last dim and cut to the
          first nsample_s; entries still equal to points (fewer neighbours than nsample_s) take
          the first entry of their row. So: the nsample_s lowest-indexed points within the
          radius, padded with the lowest.
       b. Grouping: neighbour coordinates minus their centroid (batch, centroids, nsample_s, 3)
          and neighbour features (..., channels) gathered at idx; cat([features, relative
          coordinates], -1) and permuted to (batch, channels + 3, nsample_s, centroids).
       c. The MLP: per width, a 1 x 1 Conv2d (with bias), BatchNorm2d in training mode (batch
          statistics over batch, nsample_s and centroids, biased variance, eps 1e-5; the
          running statistics are updated as a side effect), ReLU.
       d. Max over the nsample_s dim: (batch, width_last, centroids).
    4. The scales' outputs are concatenated along channels.
    Returns new_xyz transposed to (batch, 3, centroids) and the features (batch, sum of the
    last widths, centroids)."""
    def __init__(self, in_channels, radii, nsamples, mlps):
        super().__init__()
        self.radii, self.nsamples = list(radii), list(nsamples)
        self.convs = nn.ModuleList()
        self.bns = nn.ModuleList()
        for widths in mlps:
            convs, bns = nn.ModuleList(), nn.ModuleList()
            last = in_channels + 3
            for w in widths:
                convs.append(nn.Conv2d(last, w, 1))
                bns.append(nn.BatchNorm2d(w))
                last = w
            self.convs.append(convs)
            self.bns.append(bns)

    @staticmethod
    def _index(t, idx):
        # t (b, n, c), idx (b, ...) -> (b, ..., c)
        b = t.shape[0]
        flat = idx.reshape(b, -1)
        out = t.gather(1, flat.unsqueeze(-1).expand(-1, -1, t.shape[-1]))
        return out.view(*idx.shape, t.shape[-1])

    def forward(self, xyz, feats, centroid_idx):
        b, n, _ = xyz.shape
        s = centroid_idx.shape[1]
        new_xyz = self._index(xyz, centroid_idx)                                 # (b, s, 3)
        sqd = -2 * torch.matmul(new_xyz, xyz.transpose(1, 2))
        sqd = sqd + (new_xyz ** 2).sum(-1, keepdim=True) + (xyz ** 2).sum(-1).unsqueeze(1)
        base = torch.arange(n, device=xyz.device).view(1, 1, n).expand(b, s, n)
        outs = []
        for radius, k, convs, bns in zip(self.radii, self.nsamples, self.convs, self.bns):
            idx = torch.where(sqd > radius * radius, torch.full_like(base, n), base)
            idx = idx.sort(dim=-1)[0][:, :, :k]
            idx = torch.where(idx == n, idx[:, :, :1].expand(-1, -1, k), idx)
            rel = self._index(xyz, idx) - new_xyz.unsqueeze(2)                   # (b, s, k, 3)
            grouped = torch.cat([self._index(feats, idx), rel], dim=-1).permute(0, 3, 2, 1)
            for conv, bn in zip(convs, bns):
                grouped = F.relu(bn(conv(grouped)))
            outs.append(grouped.max(dim=2)[0])
        return new_xyz.transpose(1, 2), torch.cat(outs, dim=1)

batch = 8
points = 8192
centroids = 1024
channels = 6
radii = [0.1, 0.2, 0.4]
nsamples = [16, 32, 128]
mlps = [[32, 32, 64], [64, 64, 128], [64, 96, 128]]

def get_inputs():
    # a room-like block in the unit cube: floor, two walls and boxes, voxelised to 1/64
    u = torch.rand(batch, points, 3)
    kind = torch.randint(0, 4, (batch, points))
    xyz = u.clone()
    xyz[..., 2] = torch.where(kind == 0, 0.0, xyz[..., 2])                  # floor z = 0
    xyz[..., 0] = torch.where(kind == 1, 0.0, xyz[..., 0])                  # wall x = 0
    xyz[..., 1] = torch.where(kind == 2, 0.0, xyz[..., 1])                  # wall y = 0
    box_c = torch.rand(batch, 6, 3) * 0.6 + 0.2
    box = box_c.gather(1, torch.randint(0, 6, (batch, points, 1)).expand(-1, -1, 3))
    face = torch.randint(0, 3, (batch, points, 1))
    on_box = box + (u - 0.5) * 0.3 * (torch.arange(3).view(1, 1, 3) != face) + \
             0.15 * torch.sign(u[..., :1] - 0.5) * (torch.arange(3).view(1, 1, 3) == face)
    xyz = torch.where((kind == 3).unsqueeze(-1), on_box, xyz)
    xyz = (xyz.clamp(0.0, 1.0) * 64.0).round() / 64.0
    normals = torch.zeros(batch, points, 3)
    axis = torch.where(kind == 3, face.squeeze(-1), torch.tensor([2, 0, 1, 0])[kind])    # floor z, walls x and y
    normals.scatter_(2, axis.unsqueeze(-1), 1.0)
    colour = torch.rand(batch, 1, 3) + 0.2 * torch.randn(batch, points, 3)
    feats = torch.cat([colour, normals], dim=-1)
    # farthest point sampling from point 0
    idx = torch.zeros(batch, centroids, dtype=torch.long)
    dist = torch.full((batch, points), float("inf"))
    far = torch.zeros(batch, dtype=torch.long)
    for i in range(centroids):
        idx[:, i] = far
        c = xyz.gather(1, far.view(batch, 1, 1).expand(-1, -1, 3))
        dist = torch.minimum(dist, ((xyz - c) ** 2).sum(-1))
        far = dist.argmax(dim=1)
    return [xyz, feats, idx]

def get_init_inputs():
    return [channels, radii, nsamples, mlps]
