"""forge library gemm: Triton stand-ins for aten mm, addmm, bmm and baddbmm.

One tiled ``tl.dot`` kernel, ``_gemm_kernel``, computes

    C[b] = alpha * (A[b] @ B[b]) + beta * bias[b]

for every batch ``b`` (program-id axis 1; 2-D products are batches of one), with fp32
accumulation and the result cast to the output's dtype. Operands, bias and output are read
and written through their own strides, so transposed views (``b.t()``), non-contiguous
tensors, broadcast batches (batch stride 0) and broadcast biases (stride 0) need no
copies. Output tiles are visited in groups of GEMM_GROUP_M tile-rows so
that neighbouring programs share A and B in L2. A 2-D product with too few output tiles to
fill the GPU (a long K: 256 x 256 outputs over K = 524288 made 4 programs for 132 SMs) is
split along K: each program computes one slice's fp32 partial product into a workspace and
``_gemm_split_sum`` adds the slices in order and applies alpha, the bias and the cast.
Tiny products (M and N at most _gemm_tiny_mn, K at most _gemm_tiny_k: per-item 2 x 3 by
3 x 3 transforms, say) would leave a 16 x 16 x 16 tensor-core tile almost all masked, one
program per batch item; ``_gemm_tiny_kernel`` instead gives a program many items, their
products unrolled over K as fp32 multiply-adds.

Public API (the aten ops' semantics, as Inductor's wrapper calls them):
``mm(a, b, out=None)``, ``addmm(bias, a, b, alpha=1, beta=1, out=None)``,
``bmm(a, b, out=None)``, ``baddbmm(bias, a, b, alpha=1, beta=1, out=None)``.
``beta == 0`` ignores the bias entirely (NaNs in it included), as aten does.

For fp32 with tf32 on a GPU, an operand that is not K-major (a column-major A, a row-major
B) is copied K-major first when the product is large (the other side >= 1024): Hopper's tf32
tensor cores read K-major tiles only and Triton feeds them several times slower otherwise.

Knobs (header below): GEMM_BLOCK_M/N/K are the tile sizes for large shapes (each clamps to
the next power of two >= the dimension, at least 16, for small dimensions), GEMM_GROUP_M the
tile-rows per program group, GEMM_NUM_WARPS and GEMM_NUM_STAGES the launch options
(warps shrink with small tiles), GEMM_ALLOW_TF32 (1: fp32 inputs use tf32 tensor cores,
0: full-precision "ieee" products). On the CPU (Triton interpreter) bf16/fp16 tiles are
upcast to fp32 before the product, because the interpreter's bf16 dot is wrong.
"""

import torch
import triton
import triton.language as tl

# --- knobs ---
GEMM_BLOCK_M = 128
GEMM_BLOCK_N = 128
GEMM_BLOCK_K = 32
GEMM_GROUP_M = 8
GEMM_NUM_WARPS = 8
GEMM_NUM_STAGES = 3
GEMM_ALLOW_TF32 = 1
# --- end ---

_gemm_grid_y_max = 65535  # CUDA's limit on grid axis 1
# Under the CPU interpreter a tile op costs one NumPy call whatever its size: larger tiles
# there (same code and masks), fewer programs and steps.
_gemm_cpu_blocks = (512, 256, 128)
# tf32: copy an operand K-major when the other side spans this many (see _gemm_kmajor)
_gemm_kmajor_min = 1024
# Split-K: a 2-D product whose output tiles fill under half the SMs is cut along K into
# slices of at least _gemm_split_min_steps BLOCK_K steps, up to about two programs per SM;
# the slices' fp32 partial products are summed by a second kernel (deterministic, no atomics).
_gemm_split_min_steps = 16
_gemm_cpu_sms = 4  # the interpreter has no SMs: this many, so that small shapes exercise the path
_gemm_sms = {}
_gemm_tiny_mn = 8  # the multiply-add path for products this small (M, N) ...
_gemm_tiny_k = 16  # ... over this short a K
_gemm_tiny_elems = (2048, 65536)  # outputs per program of that path: GPU, interpreter


@triton.jit
def _gemm_tile(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(tile-row, tile-column) of program ``pid`` in the grouped order."""
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    rows = tl.minimum(tiles_m - first_m, GROUP_M)
    return first_m + (pid % per_group) % rows, (pid % per_group) // rows


@triton.jit
def _gemm_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, k_split,
                 s_ab, s_am, s_ak, s_bb, s_bk, s_bn, s_cb, s_cm, s_cn, s_xb, s_xm, s_xn,
                 alpha, beta, HAS_BIAS: tl.constexpr, EVEN_K: tl.constexpr, SPLIT: tl.constexpr,
                 UPCAST: tl.constexpr, PRECISION: tl.constexpr, BLOCK_M: tl.constexpr,
                 BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """SPLIT: program-id axis 1 is a slice of ``k_split`` K (one 2-D product), and the fp32
    partial product goes to slice ``split`` of c (a [splits, M, N] workspace), unscaled."""
    pid_m, pid_n = _gemm_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    if SPLIT:
        batch = 0
        out = tl.program_id(1).to(tl.int64)
        k0 = out * k_split
        k_len = tl.minimum(K - k0, k_split)
    else:
        batch = tl.program_id(1).to(tl.int64)
        out = batch
        k0 = 0
        k_len = K
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    m_ok = rm < M
    n_ok = rn < N
    rm = rm.to(tl.int64)[:, None]  # 64-bit element offsets: any output size or stride
    rn = rn.to(tl.int64)[None, :]
    a_ptrs = a_ptr + batch * s_ab + rm * s_am + (k0 + rk)[None, :] * s_ak
    b_ptrs = b_ptr + batch * s_bb + (k0 + rk)[:, None] * s_bk + rn * s_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(k_len, BLOCK_K)):
        if EVEN_K:
            a = tl.load(a_ptrs, mask=m_ok[:, None], other=0.0)
            b = tl.load(b_ptrs, mask=n_ok[None, :], other=0.0)
        else:
            k_left = k_len - k * BLOCK_K
            a = tl.load(a_ptrs, mask=m_ok[:, None] & (rk[None, :] < k_left), other=0.0)
            b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & n_ok[None, :], other=0.0)
        if UPCAST:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K * s_ak
        b_ptrs += BLOCK_K * s_bk
    acc = acc * alpha
    mask = m_ok[:, None] & n_ok[None, :]
    if HAS_BIAS:
        x_ptrs = bias_ptr + batch * s_xb + rm * s_xm + rn * s_xn
        acc += tl.load(x_ptrs, mask=mask, other=0.0).to(tl.float32) * beta
    c_ptrs = c_ptr + out * s_cb + rm * s_cm + rn * s_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gemm_tiny_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, NB, M, N, s_ab, s_am, s_ak, s_bb, s_bk, s_bn,
                      s_cb, s_cm, s_cn, s_xb, s_xm, s_xn, alpha, beta, HAS_BIAS: tl.constexpr,
                      K: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr):
    # BLOCK_B batch items' [M, N] = [M, K] @ [K, N], K unrolled
    rb = (tl.program_id(0).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B))[:, None, None]
    rm = tl.arange(0, BLOCK_M)[None, :, None]
    rn = tl.arange(0, BLOCK_N)[None, None, :]
    mask_a = (rb < NB) & (rm < M)
    mask_b = (rb < NB) & (rn < N)
    acc = tl.zeros((BLOCK_B, BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.static_range(K):
        av = tl.load(a_ptr + rb * s_ab + rm * s_am + k * s_ak, mask=mask_a, other=0.0).to(tl.float32)
        bv = tl.load(b_ptr + rb * s_bb + k * s_bk + rn * s_bn, mask=mask_b, other=0.0).to(tl.float32)
        acc += av * bv
    acc = acc * alpha
    mask = mask_a & mask_b
    if HAS_BIAS:
        acc += beta * tl.load(bias_ptr + rb * s_xb + rm * s_xm + rn * s_xn, mask=mask, other=0.0).to(tl.float32)
    tl.store(c_ptr + rb * s_cb + rm * s_cm + rn * s_cn, acc.to(c_ptr.dtype.element_ty), mask=mask)


def _gemm_tiny(a, b, c, bias, alpha, beta):
    """The multiply-add path for tiny products (see the module docstring)."""
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    nb = c.shape[0] if c.dim() == 3 else 1
    shape = (nb, m, n)
    bm, bn = 1 << (m - 1).bit_length(), 1 << (n - 1).bit_length()
    elems = _gemm_tiny_elems[1 if a.device.type == "cpu" else 0]
    per = max(1, min(elems // (bm * bn), 1 << (nb - 1).bit_length()))
    has_bias = bias is not None and beta != 0
    _gemm_tiny_kernel[(-(-nb // per),)](
        a, b, c, bias if has_bias else c, nb, m, n, *_gemm_strides(a, (nb, m, k)),
        *_gemm_strides(b, (nb, k, n)), *_gemm_strides(c, shape),
        *(_gemm_strides(bias, shape) if has_bias else (0, 0, 0)), float(alpha), float(beta),
        HAS_BIAS=has_bias, K=k, BLOCK_B=per, BLOCK_M=bm, BLOCK_N=bn,
        num_warps=max(1, min(4, per * bm * bn // 512)))


@triton.jit
def _gemm_split_sum(ws_ptr, c_ptr, bias_ptr, M, N, SPLITS, s_cm, s_cn, s_xm, s_xn, alpha, beta,
                    HAS_BIAS: tl.constexpr, BLOCK: tl.constexpr):
    """c = alpha * (the sum of the SPLITS partial products in ws) + beta * bias, cast."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < M * N
    m = offs // N
    n = offs % N
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for sp in range(0, SPLITS):
        acc += tl.load(ws_ptr + sp * M * N + offs, mask=ok, other=0.0)
    acc = acc * alpha
    if HAS_BIAS:
        acc += tl.load(bias_ptr + m * s_xm + n * s_xn, mask=ok, other=0.0).to(tl.float32) * beta
    tl.store(c_ptr + m * s_cm + n * s_cn, acc.to(c_ptr.dtype.element_ty), mask=ok)


def _gemm_block(dim, knob):
    """The knob's block size, or the next power of two >= dim (at least 16) when smaller."""
    return min(knob, max(16, 1 << (max(int(dim), 1) - 1).bit_length()))


def _gemm_precision(dtype):
    if dtype == torch.float32 and not GEMM_ALLOW_TF32:
        return "ieee"
    return "tf32"  # tf32 tensor cores for fp32; the default (no effect) for 16-bit inputs


def _gemm_kmajor(a, b, m, n):
    """tf32 tensor cores on Hopper read both operands K-major from shared memory; Triton
    feeds a K-strided operand several times slower, so such an operand is copied K-major
    first when the product is large enough to repay the copy (measured on the H200, 4096^3
    fp32 with a row-major B: 2.85 ms -> 0.95 ms, the copy included).

    The copy costs a transposing pass over the operand (its bytes read and written, at a
    fraction of the bandwidth); the slow feed costs time in proportion to the flops, that is
    to the other side's length per operand element. With the feed 3-4x slower at ~400 TFLOP/s
    and the copy at ~1 TB/s, the copy pays once the other side spans about 500-800: hence
    _gemm_kmajor_min = 1024. At 128 (the rule before) KernelBench L1 6 (256 x 256 over
    K = 524288) copied a 512 MB B for a 69 GFLOP product and ran 4.84 ms against cuBLAS's
    1.30 ms on an H100; benchmarks/gpu_gemm_large_k.py times both rules (not yet run)."""
    if a.dtype != torch.float32 or not GEMM_ALLOW_TF32 or a.device.type != "cuda":
        return a, b
    if a.stride(-1) != 1 and n >= _gemm_kmajor_min:
        a = a.contiguous()
    if b.stride(-2) != 1 and m >= _gemm_kmajor_min:
        b = b.transpose(-1, -2).contiguous().transpose(-1, -2)
    return a, b


def _gemm_strides(t, shape):
    """Strides of t (2-D or 3-D) broadcast to the 3-D ``shape`` (0 on broadcast dims)."""
    lead = len(shape) - t.dim()
    out = []
    for i, size in enumerate(shape):
        if i < lead or t.shape[i - lead] == 1:
            out.append(0)
        elif t.shape[i - lead] == size:
            out.append(t.stride(i - lead))
        else:
            raise RuntimeError(f"shape {tuple(t.shape)} does not broadcast to {tuple(shape)}")
    return out


def _gemm_launch(a, b, c, bias, alpha, beta):
    """c = alpha * a @ b (+ beta * bias) for a [(B,) M, K], b [(B,) K, N], c [(B,) M, N]."""
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    nb = c.shape[0] if c.dim() == 3 else 1
    if nb == 0 or m == 0 or n == 0:
        return
    if 0 < k <= _gemm_tiny_k and max(m, n) <= _gemm_tiny_mn:
        return _gemm_tiny(a, b, c, bias, alpha, beta)
    if nb > _gemm_grid_y_max:  # CUDA's grid axis 1 limit: the batch in chunks
        x = None if bias is None else bias.expand(c.shape)
        for i in range(0, nb, _gemm_grid_y_max):
            sl = slice(i, i + _gemm_grid_y_max)
            _gemm_launch(a[sl], b[sl], c[sl], None if x is None else x[sl], alpha, beta)
        return
    a, b = _gemm_kmajor(a, b, m, n)
    knobs = _gemm_cpu_blocks if a.device.type == "cpu" else (GEMM_BLOCK_M, GEMM_BLOCK_N, GEMM_BLOCK_K)
    bm, bn, bk = (_gemm_block(m, knobs[0]), _gemm_block(n, knobs[1]), _gemm_block(k, knobs[2]))
    has_bias = bias is not None and beta != 0
    shape = (nb, m, n)
    tiles = -(-m // bm) * -(-n // bn)
    k_split = _gemm_k_split(tiles * nb, k, bk, a.device) if nb == 1 else k
    split = k_split < k
    ws = torch.empty((-(-k // k_split), m, n), dtype=torch.float32, device=c.device) if split else c
    x_strides = _gemm_strides(bias, shape) if has_bias else (0, 0, 0)
    _gemm_kernel[(tiles, ws.shape[0] if split else nb)](
        a, b, ws, bias if has_bias and not split else ws, m, n, k, k_split,
        *_gemm_strides(a, (nb, m, k)), *_gemm_strides(b, (nb, k, n)), *_gemm_strides(ws, ws.shape if split else shape),
        *((0, 0, 0) if split else x_strides), 1.0 if split else float(alpha), float(beta),
        HAS_BIAS=has_bias and not split, EVEN_K=k % bk == 0, SPLIT=split,
        UPCAST=a.device.type == "cpu" and a.dtype != torch.float32,
        PRECISION=_gemm_precision(a.dtype), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
        GROUP_M=GEMM_GROUP_M, num_warps=min(GEMM_NUM_WARPS, max(1, bm * bn // 256)),
        num_stages=GEMM_NUM_STAGES)
    if split:
        block = 1024
        _gemm_split_sum[(-(-(m * n) // block),)](
            ws, c, bias if has_bias else c, m, n, ws.shape[0], *_gemm_strides(c, shape)[1:],
            *x_strides[1:], float(alpha), float(beta), HAS_BIAS=has_bias, BLOCK=block)


def _gemm_k_split(programs, k, bk, device):
    """K elements per slice (a multiple of bk; k itself: no split), see _gemm_split_min_steps."""
    if device.type == "cuda":
        if device.index not in _gemm_sms:
            _gemm_sms[device.index] = torch.cuda.get_device_properties(device).multi_processor_count
        sms = _gemm_sms[device.index]
    else:  # the interpreter; or meta tensors (a static compile): an H200's 132
        sms = _gemm_cpu_sms if device.type == "cpu" else 132
    if 2 * programs > sms:
        return k
    splits = min(-(-(2 * sms) // programs), k // (bk * _gemm_split_min_steps))
    if splits < 2:
        return k
    per_split = -(-k // splits)
    return -(-per_split // bk) * bk


def _gemm_out(out, shape, like):
    if out is None:
        return torch.empty(shape, dtype=like.dtype, device=like.device)
    if tuple(out.shape) != tuple(shape):
        raise RuntimeError(f"out has shape {tuple(out.shape)}, expected {tuple(shape)}")
    return out


def _gemm_check(a, b, dims):
    if a.dim() != dims or b.dim() != dims:
        raise RuntimeError(f"expected {dims}-D operands, got {a.dim()}-D and {b.dim()}-D")
    if a.shape[-1] != b.shape[-2] or (dims == 3 and a.shape[0] != b.shape[0]):
        raise RuntimeError(f"shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be multiplied")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected operands of one dtype, got {a.dtype} and {b.dtype}")


def mm(a, b, out=None):
    """a [M, K] @ b [K, N] -> [M, N] (aten.mm)."""
    _gemm_check(a, b, 2)
    out = _gemm_out(out, (a.shape[0], b.shape[1]), a)
    _gemm_launch(a, b, out, None, 1.0, 0.0)
    return out


def addmm(bias, a, b, alpha=1, beta=1, out=None):
    """beta * bias + alpha * (a @ b), bias broadcast to [M, N] (aten.addmm)."""
    _gemm_check(a, b, 2)
    shape = (a.shape[0], b.shape[1])
    out = _gemm_out(out, shape, a)
    _gemm_launch(a, b, out, bias, alpha, beta)
    return out


def bmm(a, b, out=None):
    """a [B, M, K] @ b [B, K, N] -> [B, M, N] (aten.bmm)."""
    _gemm_check(a, b, 3)
    out = _gemm_out(out, (a.shape[0], a.shape[1], b.shape[2]), a)
    _gemm_launch(a, b, out, None, 1.0, 0.0)
    return out


def baddbmm(bias, a, b, alpha=1, beta=1, out=None):
    """beta * bias + alpha * (a @ b), bias broadcast to [B, M, N] (aten.baddbmm)."""
    _gemm_check(a, b, 3)
    shape = (a.shape[0], a.shape[1], b.shape[2])
    out = _gemm_out(out, shape, a)
    _gemm_launch(a, b, out, bias, alpha, beta)
    return out
