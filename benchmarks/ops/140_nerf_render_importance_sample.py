import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """NeRF's volume rendering followed by its hierarchical (importance) sampling. Rendering:
    sample spacings by torch.diff along each ray (the last one 1e10), scaled by the ray
    direction's norm; opacity 1 - exp(-relu(sigma) * delta); transmittance from an exclusive
    cumulative sum of the optical depths (shifted by F.pad); weights; colour (sigmoid of the
    raw outputs), depth and accumulated opacity, with a white background. Sampling: a
    piecewise-constant PDF over the interval midpoints from the interior weights (plus
    1e-5), its CDF with a leading zero, deterministic stratified positions (a linspace buffer
    whose length is an init argument) located by searchsorted (right), the neighbouring CDF
    values and midpoints gathered, interpolated by torch.lerp (a zero-width bin counting as
    width 1), and merged with the coarse samples by sort. Returns colour, depth, opacity and
    the sorted fine sample positions."""
    def __init__(self, n_importance):
        super().__init__()
        self.register_buffer("u", torch.linspace(0.0, 1.0, n_importance))

    def forward(self, raw, z_vals, rays_d):
        delta = torch.diff(z_vals, dim=-1)
        delta = torch.cat([delta, torch.full_like(delta[..., :1], 1e10)], dim=-1)
        delta = delta * rays_d.norm(dim=-1, keepdim=True)
        depth_opt = F.relu(raw[..., 3]) * delta
        alpha = 1.0 - torch.exp(-depth_opt)
        trans = torch.exp(-F.pad(torch.cumsum(depth_opt, dim=-1)[..., :-1], (1, 0)))
        weights = alpha * trans
        rgb = torch.sigmoid(raw[..., :3])
        acc = weights.sum(dim=-1)
        color = (weights.unsqueeze(-1) * rgb).sum(dim=-2) + (1.0 - acc.unsqueeze(-1))
        depth = (weights * z_vals).sum(dim=-1)

        mids = 0.5 * (z_vals[..., 1:] + z_vals[..., :-1])
        w = weights[..., 1:-1] + 1e-5
        pdf = w / w.sum(dim=-1, keepdim=True)
        cdf = F.pad(torch.cumsum(pdf, dim=-1), (1, 0))
        u = self.u.expand(cdf.shape[0], -1).contiguous()
        inds = torch.searchsorted(cdf, u, right=True)
        below = (inds - 1).clamp(min=0)
        above = inds.clamp(max=cdf.shape[-1] - 1)
        cdf_lo, cdf_hi = cdf.gather(-1, below), cdf.gather(-1, above)
        bin_lo, bin_hi = mids.gather(-1, below), mids.gather(-1, above)
        denom = cdf_hi - cdf_lo
        denom = torch.where(denom < 1e-5, torch.ones_like(denom), denom)
        fine = torch.lerp(bin_lo, bin_hi, (u - cdf_lo) / denom)
        z_all = torch.sort(torch.cat([z_vals, fine], dim=-1), dim=-1).values
        return color, depth, acc, z_all

rays = 32768
samples = 64
n_importance = 128
near = 2.0
far = 6.0

def get_inputs():
    raw = torch.randn(rays, samples, 4)
    raw[..., 3] = raw[..., 3] * 4.0
    z_vals = torch.sort(near + (far - near) * torch.rand(rays, samples), dim=-1).values
    rays_d = torch.randn(rays, 3)
    return [raw, z_vals, rays_d]

def get_init_inputs():
    return [n_importance]
