import torch
import torch.nn as nn


class Model(nn.Module):
    """One Adam update of a flat parameter: the new parameter and both moments."""

    def __init__(self, lr: float, beta1: float, beta2: float, eps: float, step: int):
        super().__init__()
        self.lr, self.beta1, self.beta2, self.eps, self.step = lr, beta1, beta2, eps, step

    def forward(self, param, grad, m, v):
        m = self.beta1 * m + (1 - self.beta1) * grad
        v = self.beta2 * v + (1 - self.beta2) * grad * grad
        m_hat = m / (1 - self.beta1 ** self.step)
        v_hat = v / (1 - self.beta2 ** self.step)
        return param - self.lr * m_hat / (v_hat.sqrt() + self.eps), m, v


size = 1 << 24


def get_inputs():
    return [torch.randn(size), torch.randn(size), torch.randn(size) * 0.1, torch.rand(size) * 0.01]


def get_init_inputs():
    return [1e-3, 0.9, 0.999, 1e-8, 10]
