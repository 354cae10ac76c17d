import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Binary focal loss over logits, mean-reduced."""
    def __init__(self, gamma, alpha):
        super().__init__()
        self.gamma = gamma
        self.alpha = alpha

    def forward(self, logits, targets):
        p = torch.sigmoid(logits)
        ce = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
        p_t = p * targets + (1 - p) * (1 - targets)
        a_t = self.alpha * targets + (1 - self.alpha) * (1 - targets)
        return (a_t * (1 - p_t) ** self.gamma * ce).mean()

batch_size = 4096
classes = 1000

def get_inputs():
    return [torch.randn(batch_size, classes), torch.randint(0, 2, (batch_size, classes)).float()]

def get_init_inputs():
    return [2.0, 0.25]
