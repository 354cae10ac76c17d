import torch
import torch.nn as nn


class Model(nn.Module):
    """One LAMB optimiser step (You et al. 2020, as in NVIDIA apex's FusedLAMB) on a stack of
    equally shaped weight matrices, each one its own layer for the trust ratio. param, grad,
    exp_avg and exp_avg_sq are fp32 (layers, rows, cols). First the gradient is clipped by its
    global L2 norm over all layers: g = grad / max(1, ||grad|| / max_grad_norm). Then m = beta1
    exp_avg + (1 - beta1) g, v = beta2 exp_avg_sq + (1 - beta2) g^2, and with bias corrections
    bc1 = 1 - beta1^step, bc2 = 1 - beta2^step the update is u = (m / bc1) / (sqrt(v / bc2) +
    eps) + weight_decay * param. Per layer, with w = ||param|| and n = ||u|| (Frobenius norms),
    the trust ratio is w / n when both are > 0 and 1 otherwise, and the new parameter is param -
    lr * trust * u. Constants (lr, beta1, beta2, eps, weight_decay, max_grad_norm, step) are
    constructor arguments. Returns the new param, exp_avg and exp_avg_sq, fp32 (layers, rows,
    cols) each; the inputs are not modified."""
    def __init__(self, lr, beta1, beta2, eps, weight_decay, max_grad_norm, step):
        super().__init__()
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.weight_decay, self.max_grad_norm = weight_decay, max_grad_norm
        self.bc1 = 1.0 - beta1 ** step
        self.bc2 = 1.0 - beta2 ** step

    def forward(self, param, grad, exp_avg, exp_avg_sq):
        gnorm = grad.pow(2).sum().sqrt()
        g = grad / torch.clamp(gnorm / self.max_grad_norm, min=1.0)
        m = self.beta1 * exp_avg + (1.0 - self.beta1) * g
        v = self.beta2 * exp_avg_sq + (1.0 - self.beta2) * g * g
        u = (m / self.bc1) / (torch.sqrt(v / self.bc2) + self.eps) + self.weight_decay * param
        w_norm = param.pow(2).sum((1, 2)).sqrt()
        u_norm = u.pow(2).sum((1, 2)).sqrt()
        trust = torch.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, torch.ones_like(w_norm))
        new_param = param - self.lr * trust.view(-1, 1, 1) * u
        return new_param, m, v

layers = 16
rows = 1024
cols = 1024
lr = 1e-3
beta1 = 0.9
beta2 = 0.999
eps = 1e-6
weight_decay = 0.01
max_grad_norm = 1.0
step = 10

def get_inputs():
    param = torch.randn(layers, rows, cols) * 0.02
    grad = torch.randn(layers, rows, cols) * 1e-3
    exp_avg = torch.randn(layers, rows, cols) * 1e-4
    exp_avg_sq = torch.rand(layers, rows, cols) * 1e-6
    return [param, grad, exp_avg, exp_avg_sq]

def get_init_inputs():
    return [lr, beta1, beta2, eps, weight_decay, max_grad_norm, step]
