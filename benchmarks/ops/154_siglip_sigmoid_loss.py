import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """SigLIP's pairwise sigmoid loss for image-text pretraining, with duplicate-aware labels.
    image_emb and text_emb are bf16 (n, dim) embeddings of n pairs; pair_ids is int64 (n,), the
    id of the image each pair was drawn from (the same image may appear several times with
    different captions). Both embeddings are taken to fp32 and L2-normalised along dim
    (F.normalize, eps 1e-12). The logits are image @ text^T * exp(logit_scale) + logit_bias,
    with logit_scale and logit_bias learned scalars initialised to log(10) and -10 (n x n,
    fp32). The label of entry (i, j) is +1 when pair_ids[i] == pair_ids[j] and -1 otherwise
    (not only the diagonal). The loss is -sum(logsigmoid(label * logit)) / n. Also returned is
    the image-to-text retrieval accuracy: the fraction of rows whose argmax over the text
    columns has the same pair id as the row (fp32 scalar). Returns (loss, accuracy), both 0-d
    fp32."""
    def __init__(self):
        super().__init__()
        self.logit_scale = nn.Parameter(torch.tensor(math.log(10.0)))
        self.logit_bias = nn.Parameter(torch.tensor(-10.0))

    def forward(self, image_emb, text_emb, pair_ids):
        n = image_emb.shape[0]
        zi = F.normalize(image_emb.float(), dim=-1)
        zt = F.normalize(text_emb.float(), dim=-1)
        logits = zi @ zt.t() * self.logit_scale.exp() + self.logit_bias
        same = pair_ids.unsqueeze(1) == pair_ids.unsqueeze(0)
        labels = torch.where(same, 1.0, -1.0)
        loss = -F.logsigmoid(labels * logits).sum() / n
        best = logits.argmax(dim=1)
        accuracy = (pair_ids[best] == pair_ids).float().mean()
        return loss, accuracy

pairs = 8192
dim = 1152
distinct_images = 6144

def get_inputs():
    pair_ids = torch.randint(0, distinct_images, (pairs,))
    base = torch.randn(distinct_images, dim)
    image_emb = (base[pair_ids] + 0.6 * torch.randn(pairs, dim)).to(torch.bfloat16)
    # captions match their image to a varying degree: some pairs are hard
    strength = torch.rand(pairs, 1) * 0.3
    text_emb = (strength * base[pair_ids] + torch.randn(pairs, dim)).to(torch.bfloat16)
    return [image_emb, text_emb, pair_ids]

def get_init_inputs():
    return []
