import torch
import torch.nn as nn


class Model(nn.Module):
    """Reward-to-go: the reverse cumulative sum along time of rewards times a per-step
    discount, written with flip + cumsum + flip, divided back by the discount."""
    def __init__(self, gamma):
        super().__init__()
        self.gamma = gamma

    def forward(self, rewards):
        steps = rewards.shape[1]
        w = self.gamma ** torch.arange(steps, device=rewards.device, dtype=rewards.dtype)
        rtg = torch.flip(torch.cumsum(torch.flip(rewards * w, dims=[1]), dim=1), dims=[1])
        return rtg / w

envs = 2048
steps = 256
gamma = 0.99

def get_inputs():
    return [torch.rand(envs, steps)]

def get_init_inputs():
    return [gamma]
