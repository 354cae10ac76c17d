"""Built-in template matmul_tiled: output tiles with grouped program ordering and tl.dot.

C = A @ B for A [M, K], B [K, N] (any strides): each program owns a BLOCK_M x BLOCK_N tile
of C, walks K in BLOCK_K steps with fp32 accumulation on the tensor cores, and programs are
ordered in groups of GROUP_M tile-rows so neighbouring programs share A and B tiles in L2.
"""

import torch
import triton
import triton.language as tl

# --- knobs ---
BLOCK_M = 128
BLOCK_N = 128
BLOCK_K = 64
GROUP_M = 8
NUM_WARPS = 8
NUM_STAGES = 3
# --- semantics ---
# --- end ---


@triton.jit
def _matmul_tiled(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  GM: tl.constexpr, UPCAST: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_group = GM * tiles_n
    first_m = (pid // per_group) * GM
    group_rows = min(tiles_m - first_m, GM)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptr = A + rm.to(tl.int64)[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptr = B + rk[:, None] * stride_bk + rn.to(tl.int64)[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        k_left = K - k * BK
        a = tl.load(a_ptr, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_ptr, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        if UPCAST:  # the CPU interpreter's bf16 dot is wrong; fp32 operands there
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc)
        a_ptr += BK * stride_ak
        b_ptr += BK * stride_bk
    c_ptr = C + rm.to(tl.int64)[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptr, acc.to(C.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b):
    """a [M, K] @ b [K, N] -> [M, N] in the inputs' dtype, fp32 accumulation."""
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N),)
    _matmul_tiled[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BM=BLOCK_M, BN=BLOCK_N, BK=BLOCK_K,
                        GM=GROUP_M, UPCAST=a.device.type == "cpu", num_warps=NUM_WARPS, num_stages=NUM_STAGES)
    return c


# --- entry point: matmul (task matmul, row M0.1) ---
def run(a, b):
    return matmul(a, b)
