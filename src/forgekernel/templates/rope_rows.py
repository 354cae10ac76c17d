"""Built-in template rope_rows: rotate_half rotary embedding, ROWS head-rows per program.

q [..., S, H, D] viewed as rows of D; row r is position (r // H) % S. Each program loads
ROWS rows as two halves, reads that position's cos/sin, and writes
q * cos + rotate_half(q) * sin with PyTorch's bf16 rounding after each product and the sum.
"""

import torch
import triton
import triton.language as tl

# --- knobs ---
ROWS = 16  # (batch, position, head) rows per program
NUM_WARPS = 4
# --- semantics ---
# --- end ---


@triton.jit
def _rope_rows(Q, C, S_, Y, R, H, S, stride_c, stride_s, HALF: tl.constexpr,
               BLOCK_H: tl.constexpr, ROWS_: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS_ + tl.arange(0, ROWS_)
    cols = tl.arange(0, BLOCK_H)
    mask = (rows < R)[:, None] & (cols < HALF)[None, :]
    pos = (rows // H) % S
    base = rows[:, None] * (2 * HALF) + cols[None, :]
    x1 = tl.load(Q + base, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(Q + base + HALF, mask=mask, other=0.0).to(tl.float32)
    cpos = pos[:, None] * stride_c + cols[None, :]
    spos = pos[:, None] * stride_s + cols[None, :]
    c1 = tl.load(C + cpos, mask=mask, other=0.0).to(tl.float32)
    c2 = tl.load(C + cpos + HALF, mask=mask, other=0.0).to(tl.float32)
    s1 = tl.load(S_ + spos, mask=mask, other=0.0).to(tl.float32)
    s2 = tl.load(S_ + spos + HALF, mask=mask, other=0.0).to(tl.float32)
    ty = Y.dtype.element_ty
    y1 = (x1 * c1).to(ty).to(tl.float32) + (-x2 * s1).to(ty).to(tl.float32)
    y2 = (x2 * c2).to(ty).to(tl.float32) + (x1 * s2).to(ty).to(tl.float32)
    tl.store(Y + base, y1.to(ty), mask=mask)
    tl.store(Y + base + HALF, y2.to(ty), mask=mask)


def _promote(a, b):
    """Result dtype of a binary op (no call into torch when the dtypes agree)."""
    return a if a == b else torch.promote_types(a, b)


def rope(q, cos, sin):
    """q [..., S, H, D] * cos[S, D] + rotate_half(q) * sin[S, D], in q's dtype."""
    s, h, d = q.shape[-3], q.shape[-2], q.shape[-1]
    qc = q.contiguous()
    c = cos if cos.stride(-1) == 1 else cos.contiguous()
    sn = sin if sin.stride(-1) == 1 else sin.contiguous()
    y = torch.empty(q.shape, dtype=_promote(q.dtype, cos.dtype), device=q.device)
    r = qc.numel() // d
    half = d // 2
    rows = max(1, min(ROWS, 1 << (r - 1).bit_length()))
    _rope_rows[(-(-r // rows),)](qc, c, sn, y, r, h, s, c.stride(0), sn.stride(0),
                                        HALF=half, BLOCK_H=1 << (half - 1).bit_length(),
                                        ROWS_=rows, num_warps=NUM_WARPS)
    return y
