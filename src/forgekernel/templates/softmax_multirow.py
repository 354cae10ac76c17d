"""Built-in template softmax_multirow: several rows per program in one 2-D block.

For short rows and many of them: each program covers ROWS rows.
"""

import torch
import triton
import triton.language as tl

# --- knobs ---
ROWS = 4  # rows per program (halved while ROWS * BLOCK_N > MAX_TILE)
NUM_WARPS = 0  # 0: from the tile size
MAX_TILE = 16384  # largest ROWS * BLOCK_N block, elements
# --- semantics ---
# --- end ---


@triton.jit
def _softmax_rows(X, Y, stride_x, stride_y, M, N, ROWS_: tl.constexpr, BLOCK_N: tl.constexpr,
                  LOG: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS_ + tl.arange(0, ROWS_)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows < M)[:, None] & (cols < N)[None, :]
    x = tl.load(X + rows[:, None] * stride_x + cols[None, :], mask=mask, other=-float("inf"))
    x = x.to(tl.float32)
    # rows past M are all -inf: shift them by 0 instead of -inf to keep NaN out of them
    mx = tl.max(x, axis=1)
    mx = tl.where(rows < M, mx, 0.0)
    z = x - mx[:, None]
    e = tl.exp(z)
    s = tl.sum(e, axis=1)
    if LOG:
        y = z - tl.log(s)[:, None]
    else:
        y = e / s[:, None]
    tl.store(Y + rows[:, None] * stride_y + cols[None, :], y.to(Y.dtype.element_ty), mask=mask)


def _launch(x, log):
    n = x.shape[-1]
    x2 = x.reshape(-1, n)
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    m = x2.shape[0]
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    block_n = 1 << (n - 1).bit_length()
    rows = max(1, min(ROWS, 1 << (m - 1).bit_length()))
    while rows > 1 and rows * block_n > MAX_TILE:
        rows //= 2
    _softmax_rows[(-(-m // rows),)](x2, y, x2.stride(0), y.stride(0), m, n, ROWS_=rows,
                                           BLOCK_N=block_n, LOG=log, num_warps=NUM_WARPS or min(16, max(4, rows * block_n // 1024)))
    return y.reshape(x.shape)


def softmax(x):
    """softmax over the last axis, fp32 inside, output in x.dtype."""
    return _launch(x, False)


def log_softmax(x):
    """log-softmax over the last axis, fp32 inside, output in x.dtype."""
    return _launch(x, True)
