import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """The input stage of an RWKV-6 ("Finch") time-mix layer in bf16, everything that runs
    before the WKV recurrence kernel: a LayerNorm, the token shift and the data-dependent
    linear interpolation (ddlerp) with its low-rank adapters, the r/k/v/gate projections and
    the data-dependent decay (RWKV-LM's RWKV_Tmix_x060, the HF rwkv6 model).

    Input: x (batch, seq, hidden) bf16, the residual stream. All parameters are bf16; every
    step is the bf16 PyTorch op (matrix products accumulate in fp32 and round to bf16).
    1. h = LayerNorm(x) over hidden with learned weight and bias (eps 1e-5).
    2. Token shift: prev = h shifted one step later along seq with a zero row in front
       (prev[:, 0] = 0, prev[:, t] = h[:, t - 1]), done by F.pad (0, 0, 1, -1) on the seq dim;
       xx = prev - h.
    3. ddlerp: xxx = h + xx * maa_x; m = tanh(xxx @ maa_w1) (maa_w1 is hidden x 5*lora),
       viewed as (batch*seq, 5, lora) and taken to (5, batch*seq, lora); m = bmm(m, maa_w2)
       with maa_w2 (5, lora, hidden), viewed (5, batch, seq, hidden) and unbound into mw, mk,
       mv, mr, mg. For each z in (w, k, v, r, g): xz = h + xx * (maa_z + mz), where the maa_*
       are learned (hidden,) vectors broadcast over batch and seq.
    4. r = xr @ Wr^T, k = xk @ Wk^T, v = xv @ Wv^T (Linear, no bias, hidden -> hidden),
       g = SiLU(xg @ Wg^T).
    5. Decay: w = time_decay + tanh(xw @ decay_w1) @ decay_w2 (decay_w1 hidden x decay_lora,
       decay_w2 decay_lora x hidden, time_decay a (hidden,) vector), in bf16; the log-decay
       handed to the recurrence is log_decay = -exp(w.float()) in fp32.

    The parameters get RWKV's layer-0 ramps for maa_* and time_decay and small random LoRA
    matrices (the fresh model's zeros would make the adapters do nothing).
    Returns r, k, v, g (batch, seq, hidden) bf16 and log_decay (batch, seq, hidden) fp32."""
    def __init__(self, hidden, mix_lora, decay_lora):
        super().__init__()
        bf = torch.bfloat16
        self.mix_lora = mix_lora
        self.ln = nn.LayerNorm(hidden, eps=1e-5, dtype=bf)
        with torch.no_grad():
            self.ln.weight.copy_(1.0 + 0.1 * torch.randn(hidden))
            self.ln.bias.copy_(0.1 * torch.randn(hidden))
        ddd = torch.arange(hidden, dtype=torch.float32) / hidden
        r1 = 1.0                                  # ratio_1_to_almost0 at layer 0
        r0 = 0.0                                  # ratio_0_to_1 at layer 0
        self.maa_x = nn.Parameter((1.0 - ddd ** r1).to(bf))
        self.maa_w = nn.Parameter((1.0 - ddd ** r1).to(bf))
        self.maa_k = nn.Parameter((1.0 - ddd ** r1).to(bf))
        self.maa_v = nn.Parameter((1.0 - (ddd ** r1 + 0.3 * r0)).to(bf))
        self.maa_r = nn.Parameter((1.0 - ddd ** (0.5 * r1)).to(bf))
        self.maa_g = nn.Parameter((1.0 - ddd ** (0.5 * r1)).to(bf))
        self.maa_w1 = nn.Parameter(((torch.rand(hidden, 5 * mix_lora) - 0.5) * 0.1).to(bf))
        self.maa_w2 = nn.Parameter(((torch.rand(5, mix_lora, hidden) - 0.5) * 0.2).to(bf))
        n = torch.arange(hidden, dtype=torch.float32)
        self.time_decay = nn.Parameter((-6.0 + 5.0 * (n / (hidden - 1)) ** (0.7 + 1.3 * r0)).to(bf))
        self.decay_w1 = nn.Parameter(((torch.rand(hidden, decay_lora) - 0.5) * 0.1).to(bf))
        self.decay_w2 = nn.Parameter(((torch.rand(decay_lora, hidden) - 0.5) * 0.2).to(bf))
        self.receptance = nn.Linear(hidden, hidden, bias=False, dtype=bf)
        self.key = nn.Linear(hidden, hidden, bias=False, dtype=bf)
        self.value = nn.Linear(hidden, hidden, bias=False, dtype=bf)
        self.gate = nn.Linear(hidden, hidden, bias=False, dtype=bf)

    def forward(self, x):
        b, t, c = x.shape
        h = self.ln(x)
        xx = F.pad(h, (0, 0, 1, -1)) - h
        xxx = h + xx * self.maa_x
        m = torch.tanh(xxx @ self.maa_w1).view(b * t, 5, self.mix_lora).transpose(0, 1)
        m = torch.bmm(m, self.maa_w2).view(5, b, t, c)
        mw, mk, mv, mr, mg = m.unbind(dim=0)
        xw = h + xx * (self.maa_w + mw)
        xk = h + xx * (self.maa_k + mk)
        xv = h + xx * (self.maa_v + mv)
        xr = h + xx * (self.maa_r + mr)
        xg = h + xx * (self.maa_g + mg)
        r = self.receptance(xr)
        k = self.key(xk)
        v = self.value(xv)
        g = F.silu(self.gate(xg))
        w = self.time_decay + torch.tanh(xw @ self.decay_w1) @ self.decay_w2
        log_decay = -torch.exp(w.float())
        return r, k, v, g, log_decay

batch = 8
seq = 4096
hidden = 2048
mix_lora = 32
decay_lora = 64

def get_inputs():
    return [torch.randn(batch, seq, hidden, dtype=torch.bfloat16)]

def get_init_inputs():
    return [hidden, mix_lora, decay_lora]
