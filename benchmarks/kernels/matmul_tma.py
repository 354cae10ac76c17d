"""Experimental: a persistent matmul whose operand tiles arrive through TMA descriptors.

C = A @ B (A [M, K], B [K, N], both row-major): a fixed number of programs (one per SM by
default) walk the output tiles in grouped order; every A/B tile is loaded through a
host-built tensor descriptor (the Hopper tensor-memory accelerator), accumulated in fp32 on
the tensor cores, and the C tile is stored through a descriptor. TMA needs 16-byte aligned
row strides, so shapes with K or N not a multiple of 8 are refused (the caller falls back).
Measured by benchmarks/gpu_matmul.py before it is offered as a built-in template.
"""

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _matmul_tma(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                GM: tl.constexpr, PROGRAMS: tl.constexpr, UPCAST: tl.constexpr):
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_group = GM * tiles_n
    for tile in range(tl.program_id(0), tiles_m * tiles_n, PROGRAMS):
        first_m = (tile // per_group) * GM
        group_rows = min(tiles_m - first_m, GM)
        off_m = (first_m + (tile % per_group) % group_rows) * BM
        off_n = ((tile % per_group) // group_rows) * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = a_desc.load([off_m, k * BK])
            b = b_desc.load([k * BK, off_n])
            if UPCAST:  # the CPU interpreter's bf16 dot is wrong; fp32 operands there
                a = a.to(tl.float32)
                b = b.to(tl.float32)
            acc = tl.dot(a, b, acc)
        c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


def tma_ok(a, b) -> bool:
    """Row strides 16-byte aligned, last dimension contiguous, base pointers aligned."""
    es = a.element_size()
    return (a.stride(1) == 1 and b.stride(1) == 1 and (a.stride(0) * es) % 16 == 0
            and (b.stride(0) * es) % 16 == 0 and (b.shape[1] * es) % 16 == 0
            and a.data_ptr() % 16 == 0 and b.data_ptr() % 16 == 0)


def matmul(a, b, BM=128, BN=256, BK=64, GM=8, num_warps=8, num_stages=3, programs=0):
    m, k = a.shape
    n = b.shape[1]
    if not tma_ok(a, b):
        raise ValueError("TMA needs 16-byte aligned row strides")
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    tiles = triton.cdiv(m, BM) * triton.cdiv(n, BN)
    if programs <= 0:
        programs = torch.cuda.get_device_properties(a.device).multi_processor_count if a.is_cuda else 4
    p = min(programs, tiles)
    _matmul_tma[(p,)](TensorDescriptor.from_tensor(a, [BM, BK]), TensorDescriptor.from_tensor(b, [BK, BN]),
                      TensorDescriptor.from_tensor(c, [BM, BN]), m, n, k, BM=BM, BN=BN, BK=BK, GM=GM,
                      PROGRAMS=p, UPCAST=not a.is_cuda, num_warps=num_warps, num_stages=num_stages)
    return c
