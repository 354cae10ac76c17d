import torch
import torch.nn as nn


class Model(nn.Module):
    """Plurality vote of an ensemble of classifiers (or self-consistency samples): each member's
    fp16 logits give a vote (argmax), the votes of each token are counted into an int32 table
    by scatter_add_ along the transposed vote matrix, and the winner is the class with most
    votes, ties broken by the members' mean softmax probability. Returns the winning class
    (int64), its vote count (int32) and its mean probability (float32)."""
    def __init__(self):
        super().__init__()

    def forward(self, logits):
        members, tokens, classes = logits.shape
        votes = logits.argmax(dim=-1)
        counts = torch.zeros(tokens, classes, dtype=torch.int32, device=logits.device)
        counts.scatter_add_(1, votes.t(), torch.ones(tokens, members, dtype=torch.int32, device=logits.device))
        mean_prob = torch.softmax(logits.to(torch.float32), dim=-1).mean(0)
        winner = (counts.to(torch.float32) + mean_prob).argmax(dim=-1)
        agree = counts.gather(1, winner.unsqueeze(1)).squeeze(1)
        confidence = mean_prob.gather(1, winner.unsqueeze(1)).squeeze(1)
        return winner, agree, confidence

members = 5
tokens = 4096
classes = 1000

def get_inputs():
    shared = torch.randn(1, tokens, classes) * 2.0
    return [(shared + torch.randn(members, tokens, classes)).to(torch.float16)]

def get_init_inputs():
    return []
