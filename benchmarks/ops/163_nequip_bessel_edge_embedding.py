import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """The edge embedding of an equivariant interatomic potential (NequIP / Allegro / MACE style),
    for a periodic system. pos is fp32 (atoms, 3); edge_index is int64 (2, edges) with rows
    (source, target); edge_cell_shift is fp32 (edges, 3) of integer lattice multiples and cell is
    fp32 (3, 3). Each edge vector is r_ij = pos[target] - pos[source] + edge_cell_shift @ cell,
    and r = ||r_ij||. The radial basis is NequIP's trainable Bessel basis: (2 / r_max) *
    sin(w_n * r / r_max) / r for n = 1..num_basis, with the weights w a parameter initialised to
    linspace(1, num_basis, num_basis) * pi. It is multiplied by the polynomial cutoff envelope
    with p = 6 and x = r / r_max: 1 - (p+1)(p+2)/2 x^p + p(p+2) x^(p+1) - p(p+1)/2 x^(p+2),
    times (x < 1). The real spherical harmonics of the unit vector (x, y, z) = r_ij / r, up to
    l = 2 with component normalisation, are the 9 columns [1, sqrt(3) x, sqrt(3) y, sqrt(3) z,
    sqrt(15) x z, sqrt(15) x y, sqrt(5) (y^2 - (x^2 + z^2) / 2), sqrt(15) y z, sqrt(15) / 2
    (z^2 - x^2)]. Each atom's smooth neighbour count is the sum of the cutoff envelope over the
    edges whose target it is (index_add). Returns the edge lengths fp32 (edges,), the radial
    embedding fp32 (edges, num_basis), the spherical harmonics fp32 (edges, 9) and the
    neighbour counts fp32 (atoms,)."""
    def __init__(self, num_basis, r_max, p=6):
        super().__init__()
        self.r_max, self.p = r_max, p
        self.bessel_weights = nn.Parameter(torch.linspace(1.0, num_basis, num_basis) * math.pi)

    def forward(self, pos, edge_index, edge_cell_shift, cell):
        src, dst = edge_index[0], edge_index[1]
        vec = pos[dst] - pos[src] + edge_cell_shift @ cell
        r = vec.norm(dim=-1)
        x = r / self.r_max
        p = self.p
        env = (1.0 - (p + 1) * (p + 2) / 2 * x.pow(p) + p * (p + 2) * x.pow(p + 1)
               - p * (p + 1) / 2 * x.pow(p + 2)) * (x < 1.0)
        rr = r.unsqueeze(-1)
        bessel = (2.0 / self.r_max) * torch.sin(self.bessel_weights * rr / self.r_max) / rr
        radial = bessel * env.unsqueeze(-1)
        u = vec / rr
        ux, uy, uz = u.unbind(-1)
        s3, s5, s15 = math.sqrt(3.0), math.sqrt(5.0), math.sqrt(15.0)
        sh = torch.stack([torch.ones_like(ux), s3 * ux, s3 * uy, s3 * uz,
                          s15 * ux * uz, s15 * ux * uy, s5 * (uy * uy - 0.5 * (ux * ux + uz * uz)),
                          s15 * uy * uz, 0.5 * s15 * (uz * uz - ux * ux)], dim=-1)
        counts = torch.zeros(pos.shape[0], dtype=pos.dtype, device=pos.device).index_add(0, dst, env)
        return r, radial, sh, counts

atoms = 200_000
edges = 4_000_000
num_basis = 8
r_max = 5.0

def get_inputs():
    pos = torch.randn(atoms, 3) * 2.0
    src = torch.randint(0, atoms, (edges,))
    dst = (src + torch.randint(1, atoms, (edges,))) % atoms
    edge_index = torch.stack([src, dst])
    edge_cell_shift = torch.randint(-1, 2, (edges, 3)).float() * (torch.rand(edges, 1) < 0.1)
    cell = torch.diag(torch.tensor([3.0, 3.0, 3.0]))
    return [pos, edge_index, edge_cell_shift, cell]

def get_init_inputs():
    return [num_basis, r_max]
