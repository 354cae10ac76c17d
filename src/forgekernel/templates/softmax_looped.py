"""Built-in template softmax_looped: online softmax over column blocks, one row per program.

For long rows: one pass keeps a running max and rescaled sum per lane, a second pass writes
exp(x - max) / sum; registers stay bounded for any row length.
"""

import torch
import triton
import triton.language as tl

# --- knobs ---
BLOCK_N = 4096  # chunk width (capped at the row length's next power of 2)
NUM_WARPS = 8
# --- semantics ---
# --- end ---


@triton.jit
def _softmax_looped(X, Y, stride_x, stride_y, N, BLOCK_N_: tl.constexpr, LOG: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols0 = tl.arange(0, BLOCK_N_)
    # a finite floor instead of -inf keeps exp(m_old - m_new) free of NaN in empty lanes
    m = tl.full((BLOCK_N_,), -3.0e38, dtype=tl.float32)
    s = tl.zeros((BLOCK_N_,), dtype=tl.float32)
    for start in range(0, N, BLOCK_N_):
        cols = start + cols0
        x = tl.load(X + row * stride_x + cols, mask=cols < N, other=-float("inf"))
        x = x.to(tl.float32)
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
        m = m_new
    mx = tl.max(m, axis=0)
    total = tl.sum(s * tl.exp(m - mx), axis=0)
    for start in range(0, N, BLOCK_N_):
        cols = start + cols0
        mask = cols < N
        x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        if LOG:
            y = x - mx - tl.log(total)
        else:
            y = tl.exp(x - mx) / total
        tl.store(Y + row * stride_y + cols, y.to(Y.dtype.element_ty), mask=mask)


def _launch(x, log):
    n = x.shape[-1]
    x2 = x.reshape(-1, n)
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    m = x2.shape[0]
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    block_n = min(BLOCK_N, 1 << (n - 1).bit_length())
    _softmax_looped[(m,)](x2, y, x2.stride(0), y.stride(0), n, BLOCK_N_=block_n, LOG=log,
                          num_warps=NUM_WARPS)
    return y.reshape(x.shape)


def softmax(x):
    """softmax over the last axis, fp32 inside, output in x.dtype."""
    return _launch(x, False)


def log_softmax(x):
    """log-softmax over the last axis, fp32 inside, output in x.dtype."""
    return _launch(x, True)
