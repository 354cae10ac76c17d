import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A token-level knowledge-distillation loss for language models (Hinton et al. 2015, as in
    DistilBERT / MiniLLM-style trainers). student_logits and teacher_logits are bf16 (tokens,
    vocab); labels is int64 (tokens,) with ignore_index -100 on padding. Both logits are taken to
    fp32 and divided by the temperature T; the per-token distillation term is the forward KL
    sum_v p_t (log p_t - log p_s) with p = softmax(logits / T) (computed from log_softmax), and
    kd is its mean over tokens whose label is not -100, times T^2. ce is F.cross_entropy of the
    fp32 student logits (temperature 1) against the labels with ignore_index -100 and
    label_smoothing 0.1 (mean over the kept tokens). The loss is alpha * kd + (1 - alpha) * ce
    (T = 2.0, alpha = 0.5 by default). Returns loss, kd and ce, each a 0-d fp32."""
    def __init__(self, temperature, alpha, label_smoothing):
        super().__init__()
        self.T, self.alpha, self.ls = temperature, alpha, label_smoothing

    def forward(self, student_logits, teacher_logits, labels):
        s = student_logits.float()
        log_ps = torch.log_softmax(s / self.T, dim=-1)
        log_pt = torch.log_softmax(teacher_logits.float() / self.T, dim=-1)
        kl = (log_pt.exp() * (log_pt - log_ps)).sum(-1)
        keep = (labels != -100).float()
        kd = (kl * keep).sum() / keep.sum() * (self.T * self.T)
        ce = F.cross_entropy(s, labels, ignore_index=-100, label_smoothing=self.ls)
        return self.alpha * kd + (1.0 - self.alpha) * ce, kd, ce

tokens = 2048
vocab = 32000
temperature = 2.0
alpha = 0.5
label_smoothing = 0.1

def get_inputs():
    teacher = torch.randn(tokens, vocab, dtype=torch.bfloat16) * 3.0
    student = (teacher.float() + torch.randn(tokens, vocab) * 2.0).to(torch.bfloat16)
    labels = torch.randint(0, vocab, (tokens,))
    labels[torch.rand(tokens) < 0.15] = -100
    return [student, teacher, labels]

def get_init_inputs():
    return [temperature, alpha, label_smoothing]
