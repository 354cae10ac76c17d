import torch
import torch.nn as nn


class Model(nn.Module):
    """The GRPO policy loss (DeepSeekMath / TRL's GRPOTrainer) with DAPO's asymmetric clipping,
    on the policy's bf16 logits over sampled completions. logits are bf16 (seqs, length, vocab)
    for seqs = prompts * group completions; completion_ids are int64 (seqs, length);
    completion_mask is bool (seqs, length) (true up to each completion's end); old_logprobs and
    ref_logprobs are fp32 (seqs, length), the sampling policy's and the frozen reference's
    log-probabilities of the same tokens; rewards are fp32 (seqs,). The token log-probabilities
    are log_softmax(logits.float() / temperature) gathered at completion_ids. Advantages are
    group-relative: rewards viewed as (prompts, group), minus the group mean, divided by the
    group's unbiased standard deviation + 1e-4 (a group of equal rewards gets zero advantage),
    one per sequence, broadcast over its tokens. ratio = exp(logp - old_logprobs); the
    surrogate is min(ratio * adv, clamp(ratio, 1 - eps_low, 1 + eps_high) * adv); the KL to the
    reference is the k3 estimator exp(ref - logp) - (ref - logp) - 1; the per-token loss is
    -(surrogate - beta * kl). The loss is the mean over sequences of each sequence's masked
    token mean (mask count clamped to at least 1). Also returned: the masked mean KL over all
    tokens, and the clip fraction (masked mean of tokens where ratio < 1 - eps_low with a
    negative advantage or ratio > 1 + eps_high with a positive one). Returns three 0-d fp32
    tensors: loss, mean KL, clip fraction."""
    def __init__(self, group, temperature, eps_low, eps_high, beta):
        super().__init__()
        self.group, self.temperature = group, temperature
        self.eps_low, self.eps_high, self.beta = eps_low, eps_high, beta

    def forward(self, logits, completion_ids, completion_mask, old_logprobs, ref_logprobs, rewards):
        logp = torch.log_softmax(logits.float() / self.temperature, dim=-1)
        logp = logp.gather(-1, completion_ids.unsqueeze(-1)).squeeze(-1)
        r = rewards.view(-1, self.group)
        adv = ((r - r.mean(dim=1, keepdim=True)) / (r.std(dim=1, keepdim=True) + 1e-4)).reshape(-1, 1)
        ratio = torch.exp(logp - old_logprobs)
        clipped = torch.clamp(ratio, 1.0 - self.eps_low, 1.0 + self.eps_high)
        surrogate = torch.minimum(ratio * adv, clipped * adv)
        delta = ref_logprobs - logp
        kl = torch.exp(delta) - delta - 1.0
        per_token = -(surrogate - self.beta * kl)
        mask = completion_mask.float()
        loss = ((per_token * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)).mean()
        total = mask.sum().clamp(min=1.0)
        mean_kl = (kl * mask).sum() / total
        is_clipped = ((ratio < 1.0 - self.eps_low) & (adv < 0)) | ((ratio > 1.0 + self.eps_high) & (adv > 0))
        clip_frac = (is_clipped.float() * mask).sum() / total
        return loss, mean_kl, clip_frac

prompts = 4
group = 4
length = 512
vocab = 32000
temperature = 0.9
eps_low = 0.2
eps_high = 0.28
beta = 0.04

def get_inputs():
    seqs = prompts * group
    logits = (3.0 * torch.randn(seqs, length, vocab)).to(torch.bfloat16)
    completion_ids = torch.randint(0, vocab, (seqs, length))
    # make most sampled tokens likely ones, as sampling would
    likely = logits.argmax(dim=-1)
    completion_ids = torch.where(torch.rand(seqs, length) < 0.7, likely, completion_ids)
    logp = torch.empty(seqs, length)
    for i in range(seqs):  # row by row, to keep the fp32 copy small
        lp = torch.log_softmax(logits[i].float() / temperature, dim=-1)
        logp[i] = lp.gather(-1, completion_ids[i].unsqueeze(-1)).squeeze(-1)
    old_logprobs = logp + 0.15 * torch.randn(seqs, length)
    ref_logprobs = logp + 0.3 * torch.randn(seqs, length)
    lengths = torch.randint(length // 8, length + 1, (seqs,))
    completion_mask = torch.arange(length).unsqueeze(0) < lengths.unsqueeze(1)
    rewards = torch.randint(0, 2, (seqs,)).float()
    rewards[:group] = 1.0  # one group where every completion is right: zero advantage
    return [logits, completion_ids, completion_mask, old_logprobs, ref_logprobs, rewards]

def get_init_inputs():
    return [group, temperature, eps_low, eps_high, beta]
