"""Mean cross-entropy loss over rows of bf16 logits, computed in fp32.

loss = mean_i( logsumexp(logits[i]) - logits[i, targets[i]] ), the obvious eager form
with an fp32 upcast of the whole logits matrix.
"""

import torch

LOGIT_STD = 2.0


def run(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    h = logits.to(torch.float32)
    row_max = h.amax(-1, keepdim=True)
    lse = torch.log(torch.exp(h - row_max).sum(-1)) + row_max.squeeze(-1)
    picked = h.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return (lse - picked).mean()


def make_inputs(axes: dict, seed: int) -> tuple:
    """Logits ~ N(0, LOGIT_STD^2) in bf16 and targets uniform in [0, V)."""
    gen = torch.Generator().manual_seed(seed)
    m, v = axes["M"], axes["V"]
    logits = (torch.randn(m, v, generator=gen) * LOGIT_STD).to(torch.bfloat16)
    targets = torch.randint(0, v, (m,), generator=gen, dtype=torch.int64)
    return logits, targets
