"""Built-in template rownorm_looped: one program per row, looping over column blocks.

For very long rows that do not fit in registers: a statistics pass (two for LayerNorm)
then a normalising pass over BLOCK_N-wide chunks; the re-reads mostly hit L2.
"""

import torch
import triton
import triton.language as tl

# --- knobs ---
BLOCK_N = 4096  # chunk width (capped at the row length's next power of 2)
NUM_WARPS = 8
# --- semantics ---
EPS = 1e-6
# --- end ---


@triton.jit
def _rownorm_looped(X, R, W, B, Y, RO, stride_x, stride_r, stride_y, stride_ro, N, eps,
                    BLOCK_N_: tl.constexpr, HAS_RES: tl.constexpr, HAS_BIAS: tl.constexpr,
                    CENTER: tl.constexpr, CAST_FIRST: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols0 = tl.arange(0, BLOCK_N_)
    src = X + row * stride_x
    if HAS_RES:
        src = RO + row * stride_ro
    acc = tl.zeros((BLOCK_N_,), dtype=tl.float32)
    for start in range(0, N, BLOCK_N_):
        cols = start + cols0
        mask = cols < N
        x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0)
        if HAS_RES:
            r = tl.load(R + row * stride_r + cols, mask=mask, other=0.0)
            x = (x.to(tl.float32) + r.to(tl.float32)).to(X.dtype.element_ty)
            tl.store(RO + row * stride_ro + cols, x, mask=mask)
        h = x.to(tl.float32)
        if CENTER:
            acc += h
        else:
            acc += h * h
    if HAS_RES:
        tl.debug_barrier()  # the residual sum written above is re-read by other threads
    mean = 0.0
    if CENTER:
        mean = tl.sum(acc, axis=0) / N
        acc = tl.zeros((BLOCK_N_,), dtype=tl.float32)
        for start in range(0, N, BLOCK_N_):
            cols = start + cols0
            mask = cols < N
            h = tl.load(src + cols, mask=mask, other=0.0).to(tl.float32)
            h = tl.where(mask, h - mean, 0.0)
            acc += h * h
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for start in range(0, N, BLOCK_N_):
        cols = start + cols0
        mask = cols < N
        h = tl.load(src + cols, mask=mask, other=0.0).to(tl.float32)
        y = (h - mean) * rstd
        w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
        if CAST_FIRST:
            y = y.to(X.dtype.element_ty).to(tl.float32) * w
        else:
            y = y * w
        if HAS_BIAS:
            b = tl.load(B + cols, mask=mask, other=0.0).to(tl.float32)
            if CAST_FIRST:
                y = y.to(Y.dtype.element_ty).to(tl.float32)
            y = y + b
        tl.store(Y + row * stride_y + cols, y.to(Y.dtype.element_ty), mask=mask)


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
    block_n = min(BLOCK_N, 1 << (n - 1).bit_length())
    _rownorm_looped[(m,)](x2, r2, weight, bias if bias is not None else weight, y, ro,
                          x2.stride(0), r2.stride(0), y.stride(0), ro.stride(0), n, EPS,
                          BLOCK_N_=block_n, HAS_RES=residual is not None,
                          HAS_BIAS=bias is not None, CENTER=center, CAST_FIRST=cast_first,
                          num_warps=NUM_WARPS)
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
