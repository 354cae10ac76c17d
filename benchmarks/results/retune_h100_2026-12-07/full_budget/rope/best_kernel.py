"""Built-in template rope_rows: rotate_half rotary embedding, ROWS head-rows per program.

q [..., S, H, D] viewed as rows of D; row r is position (r // H) % S. Each program loads
ROWS rows as two halves, reads that position's cos/sin, and writes
q * cos + rotate_half(q) * sin with PyTorch's bf16 rounding after each product and the sum.
LAYOUT 0 gives each row its own cos/sin loads and position arithmetic; LAYOUT 1 gives a
program whole positions (every head of ROWS // H of them, at least one), loads each
position's cos/sin once for all its heads and knows H at compile time.
"""

import torch
import triton
import triton.language as tl

# --- knobs ---
ROWS = 8  # (batch, position, head) rows per program
NUM_WARPS = 4
LAYOUT = 0  # 1: whole positions per program, cos/sin loaded once per position
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


@triton.jit
def _rope_positions(Q, C, S_, Y, P, S, stride_c, stride_s, H: tl.constexpr, HALF: tl.constexpr,
                    BLOCK_HEADS: tl.constexpr, BLOCK_H: tl.constexpr, POS: tl.constexpr):
    p = tl.program_id(0).to(tl.int64) * POS + tl.arange(0, POS)  # (batch, position) indices
    heads = tl.arange(0, BLOCK_HEADS)
    cols = tl.arange(0, BLOCK_H)
    pos = p % S
    cmask = (p < P)[:, None] & (cols < HALF)[None, :]
    cpos = pos[:, None] * stride_c + cols[None, :]
    spos = pos[:, None] * stride_s + cols[None, :]
    c1 = tl.load(C + cpos, mask=cmask, other=0.0).to(tl.float32)[:, None, :]
    c2 = tl.load(C + cpos + HALF, mask=cmask, other=0.0).to(tl.float32)[:, None, :]
    s1 = tl.load(S_ + spos, mask=cmask, other=0.0).to(tl.float32)[:, None, :]
    s2 = tl.load(S_ + spos + HALF, mask=cmask, other=0.0).to(tl.float32)[:, None, :]
    rows = p[:, None] * H + heads[None, :]
    base = rows[:, :, None] * (2 * HALF) + cols[None, None, :]
    mask = ((p < P)[:, None] & (heads < H)[None, :])[:, :, None] & (cols < HALF)[None, None, :]
    x1 = tl.load(Q + base, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(Q + base + HALF, mask=mask, other=0.0).to(tl.float32)
    ty = Y.dtype.element_ty
    y1 = (x1 * c1).to(ty).to(tl.float32) + (-x2 * s1).to(ty).to(tl.float32)
    y2 = (x2 * c2).to(ty).to(tl.float32) + (x1 * s2).to(ty).to(tl.float32)
    tl.store(Y + base, y1.to(ty), mask=mask)
    tl.store(Y + base + HALF, y2.to(ty), mask=mask)


def _pow2(n):
    return 1 << (n - 1).bit_length()


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
    if r == 0:
        return y
    if LAYOUT:
        p = r // h  # (batch, position) pairs
        per = max(1, min(ROWS // _pow2(h), _pow2(p)))
        _rope_positions[(-(-p // per),)](qc, c, sn, y, p, s, c.stride(0), sn.stride(0), H=h, HALF=half,
                                         BLOCK_HEADS=_pow2(h), BLOCK_H=_pow2(half), POS=per,
                                         num_warps=NUM_WARPS)
        return y
    rows = max(1, min(ROWS, _pow2(r)))
    _rope_rows[(-(-r // rows),)](qc, c, sn, y, r, h, s, c.stride(0), sn.stride(0),
                                 HALF=half, BLOCK_H=_pow2(half), ROWS_=rows, num_warps=NUM_WARPS)
    return y


# --- entry point: rope (task rope, row M1.1) ---
def run(q, cos, sin):
    return rope(q, cos, sin)
