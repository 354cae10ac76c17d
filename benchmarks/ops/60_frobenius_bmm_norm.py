import torch
import torch.nn as nn


class Model(nn.Module):
    """Frobenius norm of each matrix in a batch after a matrix product."""

    def forward(self, a, b):
        return torch.linalg.matrix_norm(torch.bmm(a, b), ord="fro")


batch, m, k, n = 64, 256, 128, 256


def get_inputs():
    return [torch.randn(batch, m, k), torch.randn(batch, k, n)]


def get_init_inputs():
    return []
