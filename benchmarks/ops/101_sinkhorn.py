import torch
import torch.nn as nn


class Model(nn.Module):
    """Sinkhorn normalisation in log space (optimal-transport and differentiable sorting
    layers): a cost matrix over a temperature, then a fixed number of alternating row and
    column logsumexp normalisations; returns the near doubly-stochastic matrix."""
    def __init__(self, iterations, temperature):
        super().__init__()
        self.iterations, self.temperature = iterations, temperature

    def forward(self, cost):
        log_p = -cost / self.temperature
        for _ in range(self.iterations):
            log_p = log_p - torch.logsumexp(log_p, dim=-1, keepdim=True)
            log_p = log_p - torch.logsumexp(log_p, dim=-2, keepdim=True)
        return log_p.exp()

batch = 64
n = 512
iterations = 5
temperature = 0.1

def get_inputs():
    return [torch.rand(batch, n, n)]

def get_init_inputs():
    return [iterations, temperature]
