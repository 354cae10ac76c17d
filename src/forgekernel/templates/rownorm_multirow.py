"""Built-in template rownorm_multirow: several rows per program in one 2-D block.

For short rows (hidden <= ~2K) and many tokens: one program covers ROWS rows, so each
program moves enough bytes to hide latency, and there are fewer, fatter programs.
"""

import torch
import triton
import triton.language as tl

# --- knobs ---
ROWS = 4  # rows per program (halved while ROWS * BLOCK_N > MAX_TILE)
NUM_WARPS = 0  # 0: from the tile size
MAX_TILE = 16384  # largest ROWS * BLOCK_N block, elements
# --- semantics ---
EPS = 1e-6
# --- end ---


@triton.jit
def _rownorm_rows(X, R, W, B, Y, RO, stride_x, stride_r, stride_y, stride_ro, M, N, eps,
                  ROWS_: tl.constexpr, BLOCK_N: tl.constexpr, HAS_RES: tl.constexpr,
                  HAS_BIAS: tl.constexpr, CENTER: tl.constexpr, CAST_FIRST: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS_ + tl.arange(0, ROWS_)
    cols = tl.arange(0, BLOCK_N)
    cmask = cols < N
    mask = (rows < M)[:, None] & cmask[None, :]
    x = tl.load(X + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0)
    if HAS_RES:
        r = tl.load(R + rows[:, None] * stride_r + cols[None, :], mask=mask, other=0.0)
        x = (x.to(tl.float32) + r.to(tl.float32)).to(X.dtype.element_ty)
        tl.store(RO + rows[:, None] * stride_ro + cols[None, :], x, mask=mask)
    h = x.to(tl.float32)
    if CENTER:
        mean = tl.sum(h, axis=1) / N
        h = tl.where(mask, h - mean[:, None], 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N + eps)
    y = h * rstd[:, None]
    w = tl.load(W + cols, mask=cmask, other=0.0).to(tl.float32)[None, :]
    if CAST_FIRST:
        y = y.to(X.dtype.element_ty).to(tl.float32) * w
    else:
        y = y * w
    if HAS_BIAS:
        b = tl.load(B + cols, mask=cmask, other=0.0).to(tl.float32)[None, :]
        if CAST_FIRST:
            y = y.to(Y.dtype.element_ty).to(tl.float32)
        y = y + b
    tl.store(Y + rows[:, None] * stride_y + cols[None, :], y.to(Y.dtype.element_ty), mask=mask)


def _promote(a, b):
    """Result dtype of a binary op (no call into torch when the dtypes agree)."""
    return a if a == b else torch.promote_types(a, b)


def _rows(t, n):
    t = t.reshape(-1, n)
    return t if t.stride(-1) == 1 else t.contiguous()


def _rownorm(x, weight, bias=None, residual=None, center=False, cast_first=True, out_dtype=None):
    n = x.shape[-1]
    x2 = _rows(x, n)
    m = x2.shape[0]
    y = torch.empty((m, n), dtype=out_dtype or x.dtype, device=x.device)
    r2 = _rows(residual, n) if residual is not None else x2
    ro = torch.empty_like(x2) if residual is not None else y
    block_n = 1 << (n - 1).bit_length()
    rows = max(1, min(ROWS, 1 << (m - 1).bit_length()))
    while rows > 1 and rows * block_n > MAX_TILE:
        rows //= 2
    _rownorm_rows[(-(-m // rows),)](
        x2, r2, weight, bias if bias is not None else weight, y, ro,
        x2.stride(0), r2.stride(0), y.stride(0), ro.stride(0), m, n, EPS,
        ROWS_=rows, BLOCK_N=block_n, HAS_RES=residual is not None, HAS_BIAS=bias is not None,
        CENTER=center, CAST_FIRST=cast_first, num_warps=NUM_WARPS or min(16, max(4, rows * block_n // 1024)))
    y = y.reshape(x.shape)
    return (y, ro.reshape(x.shape)) if residual is not None else y


def rmsnorm(x, weight):
    """HF LlamaRMSNorm: fp32 normalise, cast to x.dtype, times weight (promoted dtype)."""
    return _rownorm(x, weight, out_dtype=_promote(x.dtype, weight.dtype))


def layernorm(x, weight, bias):
    """LayerNorm over the last axis, fp32 throughout, one cast at the end."""
    return _rownorm(x, weight, bias, center=True, cast_first=False)


def fused_add_rmsnorm(x, residual, weight):
    """h = x + residual (in x.dtype); returns (rmsnorm(h) * weight, h)."""
    return _rownorm(x, weight, residual=residual,
                    out_dtype=_promote(x.dtype, weight.dtype))
