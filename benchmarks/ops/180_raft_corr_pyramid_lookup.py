import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """RAFT's all-pairs correlation volume, its pooling pyramid and one lookup (Teed and Deng
    2020; the CorrBlock of princeton-vl/RAFT, also in torchvision's raft_large), for optical
    flow at 1/8 resolution.

    Inputs: fmap1, fmap2 fp32 (batch, dim, height, width), the two frames' features; flow fp32
    (batch, 2, height, width), the current flow estimate in pixels of this resolution (channel
    0 along x, channel 1 along y).
    1. corr = fmap1^T fmap2 / sqrt(dim): the features viewed (batch, dim, height * width),
       a batched product (batch, height * width, height * width), viewed as (batch * height *
       width, 1, height, width): for each pixel of frame 1, a map over frame 2.
    2. Pyramid: level 0 is corr; level i + 1 = avg_pool2d(level i, 2, stride 2) (floor sizes),
       levels in total.
    3. coords = base + flow, where base (batch, 2, height, width) has channel 0 = x (the column
       index) and channel 1 = y (the row index) from meshgrid(arange(height), arange(width),
       indexing "ij"); permuted to (batch, height, width, 2) and flattened to one (x, y) per
       pixel.
    4. Lookup at each level i with radius r: d = linspace(-r, r, 2r + 1); delta =
       stack(meshgrid(d, d, indexing "ij"), -1), shape (2r + 1, 2r + 1, 2), so that window
       position (a, c) adds d[a] to x and d[c] to y (RAFT's order). Sample points = (x, y) /
       2^i + delta. Each pixel's level map (H_i, W_i) is sampled by F.grid_sample (bilinear,
       zeros padding, align_corners True) at grid (2 x / (W_i - 1) - 1, 2 y / (H_i - 1) - 1),
       giving (2r + 1)^2 values in window order (a, c) row-major, viewed (batch, height, width,
       (2r + 1)^2).
    5. The levels are concatenated on the last dim and permuted to (batch, levels * (2r + 1)^2,
       height, width), made contiguous.
    Returns that fp32 tensor."""
    def __init__(self, levels, radius):
        super().__init__()
        self.levels, self.radius = levels, radius

    def forward(self, fmap1, fmap2, flow):
        b, dim, h, w = fmap1.shape
        r = self.radius
        corr = torch.matmul(fmap1.view(b, dim, h * w).transpose(1, 2), fmap2.view(b, dim, h * w))
        corr = corr.view(b * h * w, 1, h, w) / torch.sqrt(torch.tensor(float(dim), device=fmap1.device))
        pyramid = [corr]
        for _ in range(self.levels - 1):
            corr = F.avg_pool2d(corr, 2, stride=2)
            pyramid.append(corr)

        ys, xs = torch.meshgrid(torch.arange(h, device=flow.device), torch.arange(w, device=flow.device), indexing="ij")
        base = torch.stack([xs, ys], dim=0).float().unsqueeze(0)
        coords = (base + flow).permute(0, 2, 3, 1).reshape(b * h * w, 1, 1, 2)
        d = torch.linspace(-r, r, 2 * r + 1, device=flow.device)
        delta = torch.stack(torch.meshgrid(d, d, indexing="ij"), dim=-1).view(1, 2 * r + 1, 2 * r + 1, 2)
        out = []
        for i, lvl in enumerate(pyramid):
            hi, wi = lvl.shape[-2:]
            pts = coords / 2 ** i + delta
            x, y = pts.split([1, 1], dim=-1)
            grid = torch.cat([2 * x / (wi - 1) - 1, 2 * y / (hi - 1) - 1], dim=-1)
            sampled = F.grid_sample(lvl, grid, mode="bilinear", padding_mode="zeros", align_corners=True)
            out.append(sampled.view(b, h, w, -1))
        return torch.cat(out, dim=-1).permute(0, 3, 1, 2).contiguous()

batch = 4
dim = 256
height = 46          # a 368 x 768 crop at 1/8 resolution
width = 96
levels = 4
radius = 4

def get_inputs():
    fmap1 = torch.randn(batch, dim, height, width)
    # frame 2 is frame 1 moved by a smooth flow, plus noise
    true_flow = F.interpolate(torch.randn(batch, 2, height // 8, width // 8) * 4.0, size=(height, width),
                              mode="bilinear", align_corners=False)
    ys, xs = torch.meshgrid(torch.arange(height).float(), torch.arange(width).float(), indexing="ij")
    gx = 2 * (xs - true_flow[:, 0]) / (width - 1) - 1
    gy = 2 * (ys - true_flow[:, 1]) / (height - 1) - 1
    fmap2 = F.grid_sample(fmap1, torch.stack([gx, gy], -1), align_corners=True) + 0.3 * torch.randn(batch, dim, height, width)
    flow = true_flow + torch.randn(batch, 2, height, width) * 1.5
    return [fmap1, fmap2, flow]

def get_init_inputs():
    return [levels, radius]
