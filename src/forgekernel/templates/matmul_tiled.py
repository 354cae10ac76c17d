"""Built-in template matmul_tiled: output tiles, grouped program order, tl.dot, three paths.

C = A @ B for A [M, K], B [K, N] (any strides), fp32 accumulation on the tensor cores.

* M <= SKINNY_M (decode-sized): BLOCK_M shrinks to the next power of two >= M (at least 16),
  the tile becomes SKINNY_BLOCK_N wide and SKINNY_BLOCK_K * 16 / BLOCK_M deep, so that
  enough programs stream B without spilling;
* M >= TMA_MIN_M (0 = never) with 16-byte aligned row strides: a persistent kernel (one
  program per SM) whose A/B tiles arrive through host-built TMA tensor descriptors and whose
  C tile leaves through one;
* otherwise: one program per BLOCK_M x BLOCK_N tile with pointer loads.

Programs walk tiles in groups of GROUP_M tile-rows so that neighbours share A and B in L2.
Measured on the H200 by benchmarks/gpu_matmul.py (benchmarks/results/matmul_h200_*.json).
"""

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

# --- knobs ---
BLOCK_M = 128
BLOCK_N = 256
BLOCK_K = 64
GROUP_M = 8
NUM_WARPS = 8
NUM_STAGES = 3
TMA_MIN_M = 256
SKINNY_M = 64
SKINNY_BLOCK_N = 64
SKINNY_BLOCK_K = 256
# --- semantics ---
# --- end ---


@triton.jit
def _tile_of(tile, tiles_m, tiles_n, GM: tl.constexpr):
    per_group = GM * tiles_n
    first_m = (tile // per_group) * GM
    group_rows = min(tiles_m - first_m, GM)
    return first_m + (tile % per_group) % group_rows, (tile % per_group) // group_rows


@triton.jit
def _matmul_tiled(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  GM: tl.constexpr, UPCAST: tl.constexpr):
    pid_m, pid_n = _tile_of(tl.program_id(0), tl.cdiv(M, BM), tl.cdiv(N, BN), GM)
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


@triton.jit
def _matmul_tma(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                GM: tl.constexpr, PROGRAMS: tl.constexpr, UPCAST: tl.constexpr):
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    for tile in range(tl.program_id(0), tiles_m * tiles_n, PROGRAMS):
        pid_m, pid_n = _tile_of(tile, tiles_m, tiles_n, GM)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = a_desc.load([pid_m * BM, k * BK])
            b = b_desc.load([k * BK, pid_n * BN])
            if UPCAST:
                a = a.to(tl.float32)
                b = b.to(tl.float32)
            acc = tl.dot(a, b, acc)
        c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_desc.dtype))


_SMS = {}


def _programs(device):
    if device.type != "cuda":
        return 4
    if device.index not in _SMS:
        _SMS[device.index] = torch.cuda.get_device_properties(device).multi_processor_count
    return _SMS[device.index]


def _tma_ok(*ts):
    """TMA: last dimension contiguous, other strides and base pointers 16-byte aligned."""
    return all(t.stride(1) == 1 and (t.stride(0) * t.element_size()) % 16 == 0
               and (t.shape[1] * t.element_size()) % 16 == 0 and t.data_ptr() % 16 == 0 for t in ts)


def matmul(a, b):
    """a [M, K] @ b [K, N] -> [M, N] in the inputs' dtype, fp32 accumulation."""
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    upcast = a.device.type == "cpu"
    if TMA_MIN_M and m >= TMA_MIN_M and m > SKINNY_M and _tma_ok(a, b, c):
        tiles = -(-m // BLOCK_M) * -(-n // BLOCK_N)
        p = min(_programs(a.device), tiles)
        _matmul_tma[(p,)](TensorDescriptor.from_tensor(a, [BLOCK_M, BLOCK_K]),
                          TensorDescriptor.from_tensor(b, [BLOCK_K, BLOCK_N]),
                          TensorDescriptor.from_tensor(c, [BLOCK_M, BLOCK_N]), m, n, k,
                          BM=BLOCK_M, BN=BLOCK_N, BK=BLOCK_K, GM=GROUP_M, PROGRAMS=p, UPCAST=upcast,
                          num_warps=NUM_WARPS, num_stages=NUM_STAGES)
        return c
    if m <= SKINNY_M:  # BLOCK_K shrinks as BLOCK_M grows: the A tile stays 16 x SKINNY_BLOCK_K
        bm = max(16, 1 << (m - 1).bit_length())
        bm, bn, bk, gm, warps, stages = bm, SKINNY_BLOCK_N, max(32, SKINNY_BLOCK_K * 16 // bm), 1, 4, 3
    else:
        bm, bn, bk, gm, warps, stages = BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, NUM_WARPS, NUM_STAGES
    grid = (-(-m // bm) * -(-n // bn),)
    _matmul_tiled[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BM=bm, BN=bn, BK=bk, GM=gm, UPCAST=upcast,
                        num_warps=warps, num_stages=stages)
    return c
