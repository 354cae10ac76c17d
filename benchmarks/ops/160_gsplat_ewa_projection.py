import torch
import torch.nn as nn


class Model(nn.Module):
    """3-D Gaussian Splatting projection (the EWA step of 3DGS / gsplat's fully-fused
    projection), for one pinhole camera. Inputs, all fp32: means (n, 3) world positions, quats
    (n, 4) unnormalised rotations in (w, x, y, z) order, log_scales (n, 3), and viewmat (4, 4)
    world-to-camera. Each quaternion is L2-normalised and turned into a rotation matrix R (the
    standard formula: R = [[1-2(y^2+z^2), 2(xy-wz), 2(xz+wy)], [2(xy+wz), 1-2(x^2+z^2),
    2(yz-wx)], [2(xz-wy), 2(yz+wx), 1-2(x^2+y^2)]]); with M = R diag(exp(log_scales)) the world
    covariance is Sigma = M M^T. With W = viewmat[:3, :3] and t = viewmat[:3, 3] the camera-space
    mean is p = W mean + t = (tx, ty, tz). The projection's Jacobian uses tx, ty clamped to the
    widened frustum: lim_x = 1.3 * 0.5 * width / fx, lim_y = 1.3 * 0.5 * height / fy,
    txc = tz * clamp(tx / tz, -lim_x, lim_x) (and likewise tyc), J = [[fx / tz, 0, -fx * txc /
    tz^2], [0, fy / tz, -fy * tyc / tz^2]] (2 x 3). The 2-D covariance is J W Sigma W^T J^T plus
    0.3 on its diagonal (the anti-aliasing blur); with a, b, c its (0,0), (0,1), (1,1) entries,
    det = a c - b^2 and the conic is (c / det, -b / det, a / det). The pixel mean is (fx * tx /
    tz + cx, fy * ty / tz + cy) (unclamped). The radius is ceil(3 * sqrt(lambda_max)) with
    mid = (a + c) / 2 and lambda_max = mid + sqrt(max(0.1, mid^2 - det)). A gaussian is valid
    when tz > near (0.01) and det > 0; invalid ones get radius 0 and their means2d and conics
    set to 0. Camera constants (fx, fy, cx, cy, width, height) are constructor arguments.
    Returns means2d fp32 (n, 2), depths fp32 (n,) (= tz), conics fp32 (n, 3) and radii int32
    (n,)."""
    def __init__(self, fx, fy, cx, cy, width, height, near=0.01):
        super().__init__()
        self.fx, self.fy, self.cx, self.cy = fx, fy, cx, cy
        self.lim_x = 1.3 * 0.5 * width / fx
        self.lim_y = 1.3 * 0.5 * height / fy
        self.near = near

    def forward(self, means, quats, log_scales, viewmat):
        q = quats / quats.norm(dim=-1, keepdim=True)
        w, x, y, z = q.unbind(-1)
        R = torch.stack([
            1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
        ], dim=-1).view(-1, 3, 3)
        M = R * torch.exp(log_scales).unsqueeze(1)
        sigma = M @ M.transpose(1, 2)                                    # (n, 3, 3)
        W = viewmat[:3, :3]
        t = viewmat[:3, 3]
        p = means @ W.t() + t
        tx, ty, tz = p.unbind(-1)
        txc = tz * torch.clamp(tx / tz, -self.lim_x, self.lim_x)
        tyc = tz * torch.clamp(ty / tz, -self.lim_y, self.lim_y)
        zero = torch.zeros_like(tz)
        J = torch.stack([self.fx / tz, zero, -self.fx * txc / (tz * tz),
                         zero, self.fy / tz, -self.fy * tyc / (tz * tz)], dim=-1).view(-1, 2, 3)
        T = J @ W                                                        # (n, 2, 3)
        cov2d = T @ sigma @ T.transpose(1, 2)
        a = cov2d[:, 0, 0] + 0.3
        b = cov2d[:, 0, 1]
        c = cov2d[:, 1, 1] + 0.3
        det = a * c - b * b
        valid = (tz > self.near) & (det > 0)
        safe_det = torch.where(valid, det, torch.ones_like(det))
        conics = torch.stack([c / safe_det, -b / safe_det, a / safe_det], dim=-1)
        mid = 0.5 * (a + c)
        lam = mid + torch.sqrt(torch.clamp(mid * mid - det, min=0.1))
        radii = torch.ceil(3.0 * torch.sqrt(lam)).to(torch.int32)
        safe_tz = torch.where(valid, tz, torch.ones_like(tz))
        means2d = torch.stack([self.fx * tx / safe_tz + self.cx, self.fy * ty / safe_tz + self.cy], dim=-1)
        vm = valid.unsqueeze(-1)
        means2d = torch.where(vm, means2d, torch.zeros_like(means2d))
        conics = torch.where(vm, conics, torch.zeros_like(conics))
        radii = torch.where(valid, radii, torch.zeros_like(radii))
        return means2d, tz, conics, radii

n_gaussians = 4_000_000
fx = 1111.0
fy = 1111.0
cx = 800.0
cy = 450.0
width = 1600
height = 900

def get_inputs():
    means = torch.randn(n_gaussians, 3) * 3.0
    quats = torch.randn(n_gaussians, 4)
    log_scales = torch.randn(n_gaussians, 3) * 0.5 - 3.0
    viewmat = torch.eye(4)
    viewmat[:3, :3] = torch.tensor([[0.9950, 0.0, 0.0998], [0.0, 1.0, 0.0], [-0.0998, 0.0, 0.9950]])
    viewmat[:3, 3] = torch.tensor([0.2, -0.1, 8.0])
    return [means, quats, log_scales, viewmat]

def get_init_inputs():
    return [fx, fy, cx, cy, width, height]
