import torch
import torch.nn as nn


class Model(nn.Module):
    """One Muon optimiser step (Keller Jordan's Muon, as in modded-nanogpt and Moonlight) on a
    stack of same-shaped 2-D weights. params, grads and momentum_buf are fp32 (matrices, rows,
    cols). The momentum buffer becomes lerp(momentum_buf, grads, 1 - momentum); the Nesterov
    update is lerp(grads, new_buf, momentum). The update is cast to bf16 and divided by its
    Frobenius norm per matrix (+ 1e-7); when rows > cols it is transposed so the Gram matrix is
    the small one. Then ns_steps (5) quintic Newton-Schulz iterations in bf16 with the
    coefficients (a, b, c) = (3.4445, -4.7750, 2.0315): A = X X^T, B = b A + c A A,
    X = a X + B X (batched matmuls over the matrices); the result is transposed back. The
    orthogonalised update is scaled by max(1, rows / cols) ** 0.5 and applied in fp32 with
    decoupled weight decay: params * (1 - lr * weight_decay) - lr * update. Returns the new
    params and the new momentum buffer, both fp32 (matrices, rows, cols)."""
    def __init__(self, lr, momentum, weight_decay, ns_steps):
        super().__init__()
        self.lr, self.momentum, self.weight_decay, self.ns_steps = lr, momentum, weight_decay, ns_steps

    def forward(self, params, grads, momentum_buf):
        rows, cols = params.shape[-2:]
        buf = torch.lerp(momentum_buf, grads, 1.0 - self.momentum)
        g = torch.lerp(grads, buf, self.momentum)
        a, b, c = 3.4445, -4.7750, 2.0315
        x = g.to(torch.bfloat16)
        x = x / (x.norm(dim=(-2, -1), keepdim=True) + 1e-7)
        tall = rows > cols
        if tall:
            x = x.mT
        for _ in range(self.ns_steps):
            A = x @ x.mT
            B = b * A + c * (A @ A)
            x = a * x + B @ x
        if tall:
            x = x.mT
        update = x.float() * max(1.0, rows / cols) ** 0.5
        new_params = params * (1.0 - self.lr * self.weight_decay) - self.lr * update
        return new_params, buf

matrices = 12
rows = 4096
cols = 1024
lr = 0.02
momentum = 0.95
weight_decay = 0.01
ns_steps = 5

def get_inputs():
    params = torch.randn(matrices, rows, cols) * cols ** -0.5
    grads = torch.randn(matrices, rows, cols) * 1e-3
    momentum_buf = torch.randn(matrices, rows, cols) * 1e-3
    return [params, grads, momentum_buf]

def get_init_inputs():
    return [lr, momentum, weight_decay, ns_steps]
