import torch
import torch.nn as nn


class Model(nn.Module):
    """Paged attention for one decode step (vLLM style) with grouped-query heads and Gemma-2
    logit soft-capping. The fp16 key/value caches are pools of fixed-size blocks; each
    sequence's int32 block table (-1 past its last block, replaced by torch.where on the int
    tensor) picks its blocks with index_select, and the gathered blocks are viewed as one
    contiguous history (blocks * block_size, computed in the forward). Key/value heads are
    shared by groups of query heads (group = query heads // kv heads, from the shapes) through
    expand + contiguous. Scores in fp32 are scaled, soft-capped by cap * tanh(s / cap), masked
    past each sequence's int32 context length (a comparison with arange) and softmaxed.
    Returns the fp16 output (batch, query heads, head_dim) and the fp32 log-sum-exp of the
    scores per head (as split-KV kernels return for merging)."""
    def __init__(self, head_dim, softcap):
        super().__init__()
        self.scale = head_dim ** -0.5
        self.softcap = softcap

    def forward(self, q, k_cache, v_cache, block_tables, context_lens):
        b, hq, d = q.shape
        _, block_size, hkv, _ = k_cache.shape
        group = hq // hkv
        length = block_tables.shape[1] * block_size
        rows = torch.where(block_tables >= 0, block_tables, 0).flatten().long()
        k = k_cache.index_select(0, rows).view(b, length, hkv, 1, d)
        v = v_cache.index_select(0, rows).view(b, length, hkv, 1, d)
        k = k.expand(-1, -1, -1, group, -1).contiguous().view(b, length, hq, d)
        v = v.expand(-1, -1, -1, group, -1).contiguous().view(b, length, hq, d)
        s = torch.einsum("bhd,blhd->bhl", q.float(), k.float()) * self.scale
        s = self.softcap * torch.tanh(s / self.softcap)
        valid = torch.arange(length, device=q.device)[None, :] < context_lens[:, None]
        s = s.masked_fill(~valid[:, None, :], float("-inf"))
        lse = torch.logsumexp(s, dim=-1)
        p = torch.exp(s - lse.unsqueeze(-1))
        out = torch.einsum("bhl,blhd->bhd", p, v.float())
        return out.to(q.dtype), lse

batch = 8
kv_heads = 8
q_per_kv = 4
head_dim = 128
block_size = 16
blocks_per_seq = 64
spare_blocks = 37
softcap = 50.0

def get_inputs():
    num_blocks = batch * blocks_per_seq + spare_blocks
    q = torch.randn(batch, kv_heads * q_per_kv, head_dim).to(torch.float16)
    k_cache = torch.randn(num_blocks, block_size, kv_heads, head_dim).to(torch.float16)
    v_cache = torch.randn(num_blocks, block_size, kv_heads, head_dim).to(torch.float16)
    context_lens = torch.randint(1, blocks_per_seq * block_size + 1, (batch,), dtype=torch.int32)
    used = (context_lens + block_size - 1) // block_size
    tables = torch.randperm(num_blocks)[: batch * blocks_per_seq].view(batch, blocks_per_seq)
    tables = torch.where(torch.arange(blocks_per_seq)[None, :] < used[:, None], tables, -1)
    return [q, k_cache, v_cache, tables.to(torch.int32), context_lens]

def get_init_inputs():
    return [head_dim, softcap]
