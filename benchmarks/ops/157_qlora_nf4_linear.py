import torch
import torch.nn as nn

NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
       -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
       0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
       0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0]


class Model(nn.Module):
    """A QLoRA linear layer: a frozen NF4 (4-bit NormalFloat) base weight with double-quantised
    block scales, plus a bf16 LoRA branch. The base weight (out_features, in_features) is made
    in __init__ from a random bf16 weight and stored only quantised, flattened row-major:
    blocks of 64 consecutive weights share an absmax; each weight divided by its absmax is
    rounded to the nearest of the 16 NF4 levels (a fp32 buffer of 16 values) and its 4-bit
    index stored two to a uint8 (the even element in the high nibble, the odd one in the low
    nibble). The absmaxes are double-quantised: their mean is a fp32 offset, and absmax - offset
    is quantised symmetrically to int8 in groups of 256 blocks with one fp32 scale per group
    (group amax / 127). The forward dequantises: nibbles by >> 4 and & 0xF, the NF4 levels
    looked up by indexing, absmax = int8 * group scale + offset, level * absmax, the weight
    cast to bf16; then y = x @ W^T (bf16) + (x @ A^T) @ B^T * (lora_alpha / rank), with
    A (rank, in_features) and B (out_features, rank) bf16 parameters (B initialised non-zero,
    as after some training). x is bf16 (batch, seq, in_features); in_features * out_features
    must be a multiple of 64 * 256. Returns y, bf16 (batch, seq, out_features)."""
    def __init__(self, in_features, out_features, rank, lora_alpha):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.scaling = lora_alpha / rank
        levels = torch.tensor(NF4, dtype=torch.float32)
        self.register_buffer("nf4", levels)
        w = (torch.randn(out_features, in_features) * in_features ** -0.5).to(torch.bfloat16).float()
        blocks = w.view(-1, 64)
        absmax = blocks.abs().amax(dim=-1).clamp(min=1e-8)
        code = torch.bucketize(blocks / absmax.unsqueeze(-1), (levels[1:] + levels[:-1]) / 2)
        code = code.view(-1, 2).to(torch.uint8)
        self.register_buffer("qweight", (code[:, 0] << 4) | code[:, 1])
        offset = absmax.mean()
        centred = (absmax - offset).view(-1, 256)
        scale2 = centred.abs().amax(dim=-1).clamp(min=1e-12) / 127.0
        self.register_buffer("absmax_q", torch.round(centred / scale2.unsqueeze(-1)).clamp(-127, 127).to(torch.int8))
        self.register_buffer("absmax_scale", scale2)
        self.register_buffer("absmax_offset", offset)
        self.lora_A = nn.Parameter((torch.randn(rank, in_features) * in_features ** -0.5).to(torch.bfloat16))
        self.lora_B = nn.Parameter((torch.randn(out_features, rank) * 0.01).to(torch.bfloat16))

    def forward(self, x):
        hi = (self.qweight >> 4) & 0xF
        lo = self.qweight & 0xF
        code = torch.stack([hi, lo], dim=-1).reshape(-1).long()
        absmax = (self.absmax_q.float() * self.absmax_scale.unsqueeze(-1)).reshape(-1) + self.absmax_offset
        w = (self.nf4[code].view(-1, 64) * absmax.unsqueeze(-1)).view(self.out_features, self.in_features)
        w = w.to(torch.bfloat16)
        base = x @ w.t()
        lora = (x @ self.lora_A.t()) @ self.lora_B.t()
        return base + lora * self.scaling

batch = 4
seq = 1024
in_features = 4096
out_features = 11008
rank = 64
lora_alpha = 16

def get_inputs():
    return [torch.randn(batch, seq, in_features, dtype=torch.bfloat16)]

def get_init_inputs():
    return [in_features, out_features, rank, lora_alpha]
