import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ColBERT-style late-interaction scoring (ColBERTv2 / ColPali reranking): every query is
    scored against every candidate document by MaxSim, the sum over the query's tokens of the
    best cosine similarity with any of the document's tokens, on fp16 token embeddings with
    padding masks on both sides.

    Inputs: q fp16 (n_queries, q_len, dim) and d fp16 (n_docs, d_len, dim), token embeddings as
    they come out of the projection head (not yet normalised); q_mask bool (n_queries, q_len)
    and d_mask bool (n_docs, d_len), True for real tokens (every document has at least one).
    1. q and d are upcast to fp32 and L2-normalised over dim (F.normalize, eps 1e-12).
    2. sim[a, i, n, j] = <q[a, i], d[n, j]> in fp32 (n_queries, q_len, n_docs, d_len).
    3. Padded document tokens (d_mask False) get -inf; maxsim = max over j
       (n_queries, q_len, n_docs), then set to 0 where the query token is padding
       (q_mask False).
    4. scores[a, n] = sum over i of maxsim[a, i, n].
    Returns scores fp32 (n_queries, n_docs) and the per-token maxsim fp32
    (n_queries, q_len, n_docs)."""
    def __init__(self):
        super().__init__()

    def forward(self, q, d, q_mask, d_mask):
        qn = F.normalize(q.float(), dim=-1, eps=1e-12)
        dn = F.normalize(d.float(), dim=-1, eps=1e-12)
        sim = torch.einsum("aid,njd->ainj", qn, dn)
        sim = sim.masked_fill(~d_mask.view(1, 1, *d_mask.shape), float("-inf"))
        maxsim = sim.amax(dim=-1)
        maxsim = torch.where(q_mask.unsqueeze(-1), maxsim, torch.zeros_like(maxsim))
        scores = maxsim.sum(dim=1)
        return scores, maxsim

n_queries = 8
q_len = 32
n_docs = 256
d_len = 300
dim = 128

def get_inputs():
    # documents: tokens scattered around a few topic directions; queries share some topics
    topics = torch.randn(16, dim)
    d_topic = torch.randint(0, 16, (n_docs, d_len))
    d = topics[d_topic] + 0.8 * torch.randn(n_docs, d_len, dim)
    q_topic = torch.randint(0, 16, (n_queries, q_len))
    q = topics[q_topic] + 0.8 * torch.randn(n_queries, q_len, dim)
    d = (d * 3.0).half()
    q = (q * 3.0).half()
    d_lens = torch.randint(1, d_len + 1, (n_docs,))
    d_lens[0] = d_len
    q_lens = torch.randint(1, q_len + 1, (n_queries,))
    q_lens[0] = q_len
    q_mask = torch.arange(q_len).unsqueeze(0) < q_lens.unsqueeze(1)
    d_mask = torch.arange(d_len).unsqueeze(0) < d_lens.unsqueeze(1)
    return [q, d, q_mask, d_mask]

def get_init_inputs():
    return []
