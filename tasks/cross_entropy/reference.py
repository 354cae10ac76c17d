"""Mean cross-entropy loss over rows of bf16 logits, computed in fp32.

loss = mean_i( logsumexp(logits[i]) - logits[i, targets[i]] ), the obvious eager form
with an fp32 upcast of the whole logits matrix; the loss is an fp32 scalar.
"""

import torch

LOGIT_STD = 2.0


def run(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    # fp32 math for bf16 logits; float64 stays float64, so the judge's float64 oracle is one
    h = logits.to(torch.promote_types(logits.dtype, torch.float32))
    row_max = h.amax(-1, keepdim=True)
    lse = torch.log(torch.exp(h - row_max).sum(-1)) + row_max.squeeze(-1)
    picked = h.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return (lse - picked).mean()


def make_inputs(axes: dict, seed: int, device: str = "cpu") -> tuple:
    """Logits ~ N(0, LOGIT_STD^2) in bf16 and targets uniform in [0, V), made on ``device``."""
    m, v = axes["M"], axes["V"]
    if device == "meta":  # shapes only (static compile reports)
        return torch.empty(m, v, dtype=torch.bfloat16, device="meta"), torch.empty(m, dtype=torch.int64, device="meta")
    gen = torch.Generator(device=device).manual_seed(seed)
    logits = torch.randn(m, v, generator=gen, device=device, dtype=torch.bfloat16).mul_(LOGIT_STD)
    targets = torch.randint(0, v, (m,), generator=gen, device=device, dtype=torch.int64)
    return logits, targets
