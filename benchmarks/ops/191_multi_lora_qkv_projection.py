import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A fused QKV projection with many LoRA adapters served in one batch (Punica / S-LoRA /
    vLLM's MergedQKVParallelLinearWithLoRA with the SGMV "shrink" and "expand" steps): every
    token of the flattened batch carries the id of its request's adapter (-1 for the base
    model), and the q, k and v slices each get their own adapter's low-rank update with that
    adapter's scaling. bf16 weights and activations.

    Inputs: x bf16 (tokens, hidden); token_lora int64 (tokens,), values in [-1, n_adapters).
    Parameters (bf16): W (q_size + 2*kv_size, hidden), the fused base weight; lora_a
    (3, n_adapters, max_rank, hidden), one A stack per slice (q, k, v); lora_b_q
    (n_adapters, q_size, max_rank), lora_b_k and lora_b_v (n_adapters, kv_size, max_rank).
    Adapters have ranks 8 or max_rank; the unused rank rows of A and columns of B are zero.
    scaling fp32 (n_adapters,) buffer, alpha / rank.
    1. base = x @ W^T, an fp32 product of the bf16 operands rounded to bf16, split into
       (q_size, kv_size, kv_size) columns.
    2. For slice s with token t on adapter a = token_lora[t] >= 0:
       shrink h = scaling[a] * (x[t] @ lora_a[s, a]^T) (max_rank,) in fp32 from the bf16
       operands; expand delta = h @ lora_b_s[a]^T in fp32. Tokens with a = -1 get delta = 0.
    3. out_s = (base_s.float() + delta).to(bf16).
    Returns q bf16 (tokens, q_size), k bf16 (tokens, kv_size) and v bf16 (tokens, kv_size)."""
    def __init__(self, hidden, q_size, kv_size, n_adapters, max_rank):
        super().__init__()
        bf = torch.bfloat16
        self.sizes = [q_size, kv_size, kv_size]
        self.n_adapters, self.max_rank = n_adapters, max_rank
        self.W = nn.Parameter(((torch.rand(q_size + 2 * kv_size, hidden) * 2 - 1) * hidden ** -0.5).to(bf))
        ranks = torch.tensor([8 if i % 2 else max_rank for i in range(n_adapters)]).clamp(max=max_rank)
        rank_mask = (torch.arange(max_rank).view(1, -1) < ranks.view(-1, 1)).float()     # (n, r)
        a = (torch.rand(3, n_adapters, max_rank, hidden) * 2 - 1) * hidden ** -0.5 * 3 ** 0.5
        self.lora_a = nn.Parameter((a * rank_mask.view(1, n_adapters, max_rank, 1)).to(bf))
        self.lora_b_q = nn.Parameter((0.05 * torch.randn(n_adapters, q_size, max_rank) * rank_mask.unsqueeze(1)).to(bf))
        self.lora_b_k = nn.Parameter((0.05 * torch.randn(n_adapters, kv_size, max_rank) * rank_mask.unsqueeze(1)).to(bf))
        self.lora_b_v = nn.Parameter((0.05 * torch.randn(n_adapters, kv_size, max_rank) * rank_mask.unsqueeze(1)).to(bf))
        alpha = 2.0 * ranks.float()                                 # lora_alpha = 2 * rank
        alpha[::3] = 16.0                                           # some adapters with a fixed alpha
        self.register_buffer("scaling", alpha / ranks.float())

    def forward(self, x, token_lora):
        t = x.shape[0]
        n, r = self.n_adapters, self.max_rank
        xf = x.float()
        base = F.linear(xf, self.W.float()).to(torch.bfloat16)
        base = torch.split(base, self.sizes, dim=-1)
        sel = (token_lora.view(t, 1) == torch.arange(n, device=x.device).view(1, n)).float()
        sel = sel * self.scaling.view(1, n)                          # (t, n); 0 for base tokens
        outs = []
        for s, lora_b in enumerate((self.lora_b_q, self.lora_b_k, self.lora_b_v)):
            h = F.linear(xf, self.lora_a[s].float().reshape(n * r, -1)).view(t, n, r)
            h = (h * sel.unsqueeze(-1)).reshape(t, n * r)           # only the token's adapter
            b_mat = lora_b.float().permute(0, 2, 1).reshape(n * r, -1)
            delta = h @ b_mat
            outs.append((base[s].float() + delta).to(torch.bfloat16))
        return tuple(outs)

tokens = 4096
hidden = 2048
q_size = 2048
kv_size = 512
n_adapters = 8
max_rank = 16
n_requests = 24

def get_inputs():
    x = torch.randn(tokens, hidden).to(torch.bfloat16)
    # requests are contiguous runs of tokens; each request uses one adapter or none (-1)
    req = torch.sort(torch.randint(0, n_requests, (tokens,))).values
    req_adapter = torch.randint(-1, n_adapters, (n_requests,))
    token_lora = req_adapter[req]
    return [x, token_lora]

def get_init_inputs():
    return [hidden, q_size, kv_size, n_adapters, max_rank]
