import torch
import torch.nn as nn


class Model(nn.Module):
    """Bilinear attention (BAN, for visual question answering): image regions and question
    words are projected with ReLU, a bilinear attention map per glimpse is formed by a
    three-operand einsum (glimpse vectors, regions, words), padded words (from integer
    question lengths) are masked to -inf, the softmax runs over regions and words together,
    and a second three-operand einsum pools the joint features. Returns the joint feature
    summed over glimpses and the attention maps."""
    def __init__(self, v_dim, q_dim, hidden, glimpses):
        super().__init__()
        self.v_proj = nn.Linear(v_dim, hidden)
        self.q_proj = nn.Linear(q_dim, hidden)
        self.h_mat = nn.Parameter(torch.randn(glimpses, hidden) / hidden ** 0.5)
        self.h_bias = nn.Parameter(torch.zeros(glimpses, 1, 1))

    def forward(self, v, q, q_len):
        v_ = torch.relu(self.v_proj(v))
        q_ = torch.relu(self.q_proj(q))
        logits = torch.einsum("hk,bvk,bqk->bhvq", self.h_mat, v_, q_) + self.h_bias
        pad = torch.arange(q.shape[1], device=q.device)[None, :] >= q_len[:, None]
        logits = logits.masked_fill(pad[:, None, None, :], float("-inf"))
        att = torch.softmax(logits.flatten(2), dim=-1).view_as(logits)
        joint = torch.einsum("bvk,bhvq,bqk->bhk", v_, att, q_)
        return joint.sum(1), att

batch = 64
regions = 100
words = 14
v_dim = 2048
q_dim = 1024
hidden = 1024
glimpses = 4

def get_inputs():
    v = torch.relu(torch.randn(batch, regions, v_dim))
    q = torch.randn(batch, words, q_dim)
    q_len = torch.randint(1, words + 1, (batch,))
    return [v, q, q_len]

def get_init_inputs():
    return [v_dim, q_dim, hidden, glimpses]
