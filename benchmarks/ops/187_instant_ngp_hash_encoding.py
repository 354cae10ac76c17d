import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Instant-NGP's multiresolution hash encoding of 3-D points (Mueller et al. 2022; the
    tiny-cuda-nn HashGrid used by nerfstudio's nerfacto, threestudio and other 2023-2025 NeRF
    and 3-D generation code), written in PyTorch with int64 index arithmetic.

    Input: x fp32 (n_points, 3), positions in the unit cube [0, 1]^3.
    Parameters: table fp32 (n_levels, T, features), T = 2^log2_hashmap_size.
    Level l has resolution res_l = floor(base_resolution * growth^l), growth =
    (max_resolution / base_resolution)^(1 / (n_levels - 1)) (fixed at construction). Per level:
    1. s = x * res_l; p0 = floor(s) as int64, clamped to [0, res_l - 1]; f = s - p0 (fp32).
    2. For each of the 8 cell corners o in {0,1}^3: c = p0 + o (int64, per axis in [0, res_l]).
       Index: if (res_l + 1)^3 <= T the level is dense and idx = c0 + c1 (res_l + 1) +
       c2 (res_l + 1)^2; otherwise idx = (c0 * 1 XOR c1 * 2654435761 XOR c2 * 805459861)
       AND (T - 1) (the same low bits as tiny-cuda-nn's uint32 hash, T being a power of two).
       Trilinear weight w_o = prod over axes of (f if o = 1 else 1 - f).
    3. enc_l = sum over corners of w_o * table[l, idx_o] (n_points, features).
    Returns the levels' encodings concatenated along the last dim, fp32
    (n_points, n_levels * features), level-major."""
    def __init__(self, n_levels, features, log2_hashmap_size, base_resolution, max_resolution):
        super().__init__()
        self.n_levels = n_levels
        self.T = 2 ** log2_hashmap_size
        growth = (max_resolution / base_resolution) ** (1.0 / max(n_levels - 1, 1))
        self.res = [int(base_resolution * growth ** l + 1e-6) for l in range(n_levels)]
        self.dense = [(r + 1) ** 3 <= self.T for r in self.res]
        self.table = nn.Parameter((torch.rand(n_levels, self.T, features) * 2.0 - 1.0) * 0.1)
        offsets = torch.tensor([[(i >> 0) & 1, (i >> 1) & 1, (i >> 2) & 1] for i in range(8)])
        self.register_buffer("offsets", offsets, persistent=False)        # (8, 3) int64

    def forward(self, x):
        outs = []
        off = self.offsets
        for l in range(self.n_levels):
            res = self.res[l]
            s = x * res
            p0 = torch.floor(s).long().clamp(0, res - 1)
            f = s - p0.to(s.dtype)                                       # (n, 3)
            c = p0.unsqueeze(1) + off                                    # (n, 8, 3)
            if self.dense[l]:
                idx = c[..., 0] + c[..., 1] * (res + 1) + c[..., 2] * ((res + 1) * (res + 1))
            else:
                idx = (c[..., 0] ^ (c[..., 1] * 2654435761) ^ (c[..., 2] * 805459861)) & (self.T - 1)
            w = torch.where(off.bool(), f.unsqueeze(1), 1.0 - f.unsqueeze(1)).prod(dim=-1)
            feat = self.table[l][idx]                                    # (n, 8, F)
            outs.append((w.unsqueeze(-1) * feat).sum(dim=1))
        return torch.cat(outs, dim=-1)

n_points = 262144
n_levels = 16
features = 2
log2_hashmap_size = 19
base_resolution = 16
max_resolution = 2048

def get_inputs():
    # samples along camera rays through the unit cube, concentrated near a surface
    origins = torch.rand(n_points, 3)
    dirs = F.normalize(torch.randn(n_points, 3), dim=-1)
    t = 0.3 * torch.rand(n_points, 1) ** 2
    x = (origins + t * dirs).clamp(0.0, 1.0)
    return [x]

def get_init_inputs():
    return [n_levels, features, log2_hashmap_size, base_resolution, max_resolution]
