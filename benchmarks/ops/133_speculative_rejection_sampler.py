import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Speculative decoding's verification step (rejection sampling, greedy recovery): from
    fp16 target and draft logits at a temperature, each drafted token is accepted when
    u * q(token) < p(token) for the given uniforms u; the accepted prefix length comes from a
    cumulative product of the int32 accept flags; the next token is the argmax of the residual
    max(0, p - q) at the first rejected position, or of the target's extra (bonus) position
    when all are accepted. Returns the emitted tokens, padded with -1 (int64, batch x
    draft_len + 1), and the number accepted per sequence."""
    def __init__(self, temperature):
        super().__init__()
        self.temperature = temperature

    def forward(self, target_logits, draft_logits, draft_tokens, uniforms):
        n = draft_tokens.shape[1]
        p = torch.softmax(target_logits.to(torch.float32) / self.temperature, dim=-1)
        q = torch.softmax(draft_logits.to(torch.float32) / self.temperature, dim=-1)
        p_head = p.narrow(1, 0, n)
        p_tok = torch.take_along_dim(p_head, draft_tokens.unsqueeze(-1), dim=-1).squeeze(-1)
        q_tok = torch.take_along_dim(q, draft_tokens.unsqueeze(-1), dim=-1).squeeze(-1)
        accept = uniforms * q_tok < p_tok
        n_acc = torch.cumprod(accept.to(torch.int32), dim=1).sum(dim=1)
        dist = torch.cat([(p_head - q).clamp(min=0), p.narrow(1, n, 1)], dim=1)
        nxt = torch.take_along_dim(dist, n_acc[:, None, None], dim=1).squeeze(1).argmax(dim=-1)
        pos = torch.arange(n + 1, device=draft_tokens.device)[None, :]
        drafted = F.pad(draft_tokens, (0, 1), value=-1)
        tokens = torch.where(pos < n_acc[:, None], drafted,
                             torch.where(pos == n_acc[:, None], nxt[:, None], -1))
        return tokens, n_acc

batch = 32
draft_len = 7
vocab = 32000
temperature = 0.8

def get_inputs():
    draft = torch.randn(batch, draft_len + 1, vocab) * 3.0
    target = 0.9 * draft + torch.randn(batch, draft_len + 1, vocab) * 0.3
    draft = draft[:, :draft_len].to(torch.float16)
    tokens = draft.to(torch.float32).argmax(dim=-1)
    return [target.to(torch.float16), draft, tokens, torch.rand(batch, draft_len)]

def get_init_inputs():
    return [temperature]
