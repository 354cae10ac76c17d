"""Built-in template rownorm_cute: one CuTe DSL kernel, one CTA per row.

HF-style RMSNorm in the CuTe DSL: each CTA reduces its row's sum of squares in fp32 (warp
shuffles, then one shared-memory exchange across warps), then normalises, casts to the input
dtype and scales by the weight. Compiled once per process and dtype with ``cute.compile``;
the row length and count stay dynamic, so one compiled kernel serves every shape.
"""

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
from cutlass.cute.runtime import from_dlpack

# --- knobs ---
THREADS = 256  # threads per CTA (a multiple of 32)
# --- semantics ---
EPS = 1e-6
# --- end ---

WARPS = THREADS // 32


@cute.kernel
def _rms_row(mX: cute.Tensor, mW: cute.Tensor, mY: cute.Tensor, eps: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    row, _, _ = cute.arch.block_idx()
    n = mX.shape[1]
    smem = cutlass.utils.SmemAllocator()
    partial = smem.allocate_tensor(cutlass.Float32, cute.make_layout(WARPS), byte_alignment=16)
    acc = cutlass.Float32(0.0)
    for j in cutlass.range(tidx, n, THREADS):
        v = mX[row, j].to(cutlass.Float32)
        acc += v * v
    acc = cute.arch.warp_reduction_sum(acc)  # every lane holds the warp's sum
    # every lane stores it (the same value): a lane-0 branch followed by the barrier never
    # finished on an H100 or an H200 (nvidia-cutlass-dsl 4.8.1), each part alone did
    partial[cute.arch.warp_idx()] = acc
    cute.arch.barrier()
    total = cutlass.Float32(0.0)
    for w in cutlass.range_constexpr(WARPS):
        total += partial[w]
    inv = cute.math.rsqrt(total / n.to(cutlass.Float32) + eps)
    for j in cutlass.range(tidx, n, THREADS):
        h = (mX[row, j].to(cutlass.Float32) * inv).to(mX.element_type)
        mY[row, j] = (h.to(cutlass.Float32) * mW[j].to(cutlass.Float32)).to(mY.element_type)


@cute.jit
def _rms_launch(mX: cute.Tensor, mW: cute.Tensor, mY: cute.Tensor, eps: cutlass.Float32,
                stream: cuda.CUstream):
    _rms_row(mX, mW, mY, eps).launch(grid=(mX.shape[0], 1, 1), block=(THREADS, 1, 1), stream=stream)


_COMPILED = {}


def rmsnorm(x, weight):
    """HF LlamaRMSNorm: fp32 normalise, cast to x.dtype, times weight (x and weight share a dtype)."""
    if weight.dtype != x.dtype:
        raise TypeError("rownorm_cute: x and weight must share one dtype")
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    y = torch.empty_like(x2)
    if x2.numel() == 0:
        return y.reshape(x.shape)
    args = (from_dlpack(x2).mark_layout_dynamic(), from_dlpack(weight.contiguous()).mark_layout_dynamic(),
            from_dlpack(y).mark_layout_dynamic())
    # launch on the caller's current stream (a CPU tensor, compiled only, has none)
    stream = cuda.CUstream(torch.cuda.current_stream(x.device).cuda_stream if x.is_cuda else 0)
    if x2.dtype not in _COMPILED:
        _COMPILED[x2.dtype] = cute.compile(_rms_launch, *args, cutlass.Float32(EPS), stream)
    _COMPILED[x2.dtype](*args, cutlass.Float32(EPS), stream)
    return y.reshape(x.shape)
