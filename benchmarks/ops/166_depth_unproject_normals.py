import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Back-projection of depth maps to world-space point clouds with normals, as in RGB-D
    fusion, monocular-depth evaluation and Gaussian-splatting initialisation. depth is fp16
    (batch, height, width) in metres; intrinsics is fp32 (batch, 4) holding (fx, fy, cx, cy);
    cam_to_world is fp32 (batch, 4, 4). Depth is taken to fp32 (z). Pixel (i, j) (row, column,
    integer coordinates, no half-pixel offset) unprojects to the camera point ((j - cx) / fx * z,
    (i - cy) / fy * z, z). A pixel is valid when z is finite and min_depth < z < max_depth (0.1
    and 10.0 by default). Camera-space normals come from central differences of the camera points
    (zero-padded by one pixel): dx = P[i, j+1] - P[i, j-1], dy = P[i+1, j] - P[i-1, j], n =
    normalize(cross(dx, dy)) (F.normalize, eps 1e-12), negated where n . P > 0 so that it faces
    the camera; a normal is valid when the pixel and its four neighbours are valid (so border
    pixels never are). With R = cam_to_world[:3, :3] and t = cam_to_world[:3, 3], world points are
    R P + t and world normals R n. Invalid points and invalid normals are set to 0. Returns the
    points fp32 (batch, height, width, 3), the normals fp32 (batch, height, width, 3) and the
    point validity mask bool (batch, height, width)."""
    def __init__(self, min_depth, max_depth):
        super().__init__()
        self.min_depth, self.max_depth = min_depth, max_depth

    def forward(self, depth, intrinsics, cam_to_world):
        b, h, w = depth.shape
        z = depth.float()
        fx, fy, cx, cy = [c.view(b, 1, 1) for c in intrinsics.unbind(-1)]
        jj = torch.arange(w, device=depth.device, dtype=torch.float32).view(1, 1, w)
        ii = torch.arange(h, device=depth.device, dtype=torch.float32).view(1, h, 1)
        P = torch.stack([(jj - cx) / fx * z, (ii - cy) / fy * z, z], dim=1)    # (b, 3, h, w)
        valid = torch.isfinite(z) & (z > self.min_depth) & (z < self.max_depth)
        Pp = F.pad(P, (1, 1, 1, 1))
        dx = Pp[:, :, 1:-1, 2:] - Pp[:, :, 1:-1, :-2]
        dy = Pp[:, :, 2:, 1:-1] - Pp[:, :, :-2, 1:-1]
        n = F.normalize(torch.cross(dx, dy, dim=1), dim=1, eps=1e-12)
        n = torch.where((n * P).sum(1, keepdim=True) > 0, -n, n)
        vp = F.pad(valid.float(), (1, 1, 1, 1))
        nvalid = valid & (vp[:, 1:-1, 2:] > 0) & (vp[:, 1:-1, :-2] > 0) & (vp[:, 2:, 1:-1] > 0) & (vp[:, :-2, 1:-1] > 0)
        R = cam_to_world[:, :3, :3]
        t = cam_to_world[:, :3, 3]
        pts = torch.einsum("bij,bjhw->bhwi", R, P) + t.view(b, 1, 1, 3)
        nrm = torch.einsum("bij,bjhw->bhwi", R, n)
        pts = torch.where(valid.unsqueeze(-1), pts, torch.zeros_like(pts))
        nrm = torch.where(nvalid.unsqueeze(-1), nrm, torch.zeros_like(nrm))
        return pts, nrm, valid

batch = 16
height = 720
width = 1280
min_depth = 0.1
max_depth = 10.0

def get_inputs():
    yy = torch.linspace(-1, 1, height).view(1, height, 1)
    xx = torch.linspace(-1, 1, width).view(1, 1, width)
    depth = 3.0 + xx + 0.5 * yy * yy + 0.05 * torch.randn(batch, height, width)
    depth[torch.rand(batch, height, width) < 0.05] = 0.0            # holes
    depth = depth.to(torch.float16)
    intrinsics = torch.tensor([[910.0, 910.0, 640.0, 360.0]]).repeat(batch, 1)
    intrinsics[:, :2] += torch.rand(batch, 2) * 20.0
    q = torch.nn.functional.normalize(torch.randn(batch, 4), dim=-1)
    qw, qx, qy, qz = q.unbind(-1)
    R = torch.stack([1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qw * qz), 2 * (qx * qz + qw * qy),
                     2 * (qx * qy + qw * qz), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qw * qx),
                     2 * (qx * qz - qw * qy), 2 * (qy * qz + qw * qx), 1 - 2 * (qx * qx + qy * qy)], -1).view(batch, 3, 3)
    cam_to_world = torch.eye(4).repeat(batch, 1, 1)
    cam_to_world[:, :3, :3] = R
    cam_to_world[:, :3, 3] = torch.randn(batch, 3)
    return [depth, intrinsics, cam_to_world]

def get_init_inputs():
    return [min_depth, max_depth]
