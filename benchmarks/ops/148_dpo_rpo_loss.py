import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """The preference-tuning loss of DPO (Rafailov et al.) with conservative label smoothing and
    RPO's added NLL term, as TRL's DPOTrainer computes it with precomputed reference log-probs.
    The policy's bf16 logits hold the chosen completions then the rejected ones along the batch
    (2 * pairs, seq, vocab); the int64 labels hold -100 over the prompt and the padding. Logits
    are shifted against the labels (position t predicts label t + 1), log_softmax is taken in
    fp32, the log-prob at each label is gathered (-100 replaced by 0 first) and summed over the
    positions whose label is not -100, giving one log-prob per sequence. With
    h = beta * ((chosen - rejected) - (ref_chosen - ref_rejected)) the preference loss is the
    mean of -(1 - smoothing) logsigmoid(h) - smoothing logsigmoid(-h); RPO adds alpha times the
    chosen completions' NLL averaged over their label tokens. Returns the loss (a scalar), the
    chosen rewards beta * (chosen - ref_chosen) and the rejected rewards (pairs each)."""
    def __init__(self, beta, label_smoothing, rpo_alpha):
        super().__init__()
        self.beta, self.label_smoothing, self.rpo_alpha = beta, label_smoothing, rpo_alpha

    def forward(self, logits, labels, ref_chosen_logps, ref_rejected_logps):
        pairs = logits.shape[0] // 2
        labels = labels[:, 1:]
        mask = labels != -100
        logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
        token_logp = torch.gather(logp, 2, torch.where(mask, labels, 0).unsqueeze(-1)).squeeze(-1)
        token_logp = token_logp * mask
        seq_logp = token_logp.sum(dim=-1)
        chosen, rejected = seq_logp[:pairs], seq_logp[pairs:]
        h = self.beta * ((chosen - rejected) - (ref_chosen_logps - ref_rejected_logps))
        loss = (-(1 - self.label_smoothing) * F.logsigmoid(h) - self.label_smoothing * F.logsigmoid(-h)).mean()
        nll = -chosen.sum() / mask[:pairs].sum()
        loss = loss + self.rpo_alpha * nll
        chosen_rewards = self.beta * (chosen - ref_chosen_logps)
        rejected_rewards = self.beta * (rejected - ref_rejected_logps)
        return loss, chosen_rewards, rejected_rewards

pairs = 2
seq = 256
vocab = 32000
beta = 0.1
label_smoothing = 0.1
rpo_alpha = 0.5

def get_inputs():
    logits = (torch.randn(2 * pairs, seq, vocab) * 2.0).to(torch.bfloat16)
    labels = torch.randint(0, vocab, (2 * pairs, seq))
    prompt = torch.randint(16, seq // 2, (pairs,)).repeat(2)
    end = prompt + torch.randint(8, seq // 2, (2 * pairs,))
    pos = torch.arange(seq)[None, :]
    labels = torch.where((pos >= prompt[:, None]) & (pos < end[:, None]), labels, -100)
    count = (end - prompt).float()
    ref = -(math.log(vocab) + 2.0) * count + 5.0 * torch.randn(2 * pairs)
    return [logits, labels, ref[:pairs].contiguous(), ref[pairs:].contiguous()]

def get_init_inputs():
    return [beta, label_smoothing, rpo_alpha]
