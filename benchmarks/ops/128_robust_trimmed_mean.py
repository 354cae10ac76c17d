import torch
import torch.nn as nn


class Model(nn.Module):
    """Byzantine-robust aggregation of client updates in federated learning, coordinate by
    coordinate over the clients of a bf16 (clients, params) tensor: the trimmed mean (sorted
    over the clients, dim 0, the lowest and highest `trim` fraction cut off with narrow, the
    rest averaged in float32), the lower median (kthvalue) and the spread max - min (aminmax).
    The number cut off each end is int(clients * trim), read from the input's shape."""
    def __init__(self, trim):
        super().__init__()
        self.trim = trim

    def forward(self, updates):
        n = updates.shape[0]
        cut = int(n * self.trim)
        ranked = torch.sort(updates, dim=0).values
        trimmed = ranked.narrow(0, cut, n - 2 * cut).to(torch.float32).mean(0)
        median = torch.kthvalue(updates, (n + 1) // 2, dim=0).values.to(torch.float32)
        low, high = torch.aminmax(updates, dim=0)
        return trimmed, median, high.to(torch.float32) - low.to(torch.float32)

clients = 32
params = 524288
trim = 0.1

def get_inputs():
    updates = torch.randn(clients, params) * 0.01
    updates[: max(1, clients // 8)] *= 50.0  # a few clients send outsized updates
    return [updates.to(torch.bfloat16)]

def get_init_inputs():
    return [trim]
