import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """CLIP's symmetric contrastive loss: both embeddings L2-normalised, logits as their
    similarity times a learned temperature (exp of a log scale), cross-entropy with the
    diagonal as labels in both directions, averaged."""
    def __init__(self):
        super().__init__()
        self.logit_scale = nn.Parameter(torch.tensor(2.6592))

    def forward(self, image, text):
        image = F.normalize(image, dim=-1)
        text = F.normalize(text, dim=-1)
        logits = self.logit_scale.exp() * image @ text.t()
        labels = torch.arange(logits.shape[0], device=logits.device)
        return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2

batch = 4096
dim = 512

def get_inputs():
    return [torch.randn(batch, dim), torch.randn(batch, dim)]

def get_init_inputs():
    return []
