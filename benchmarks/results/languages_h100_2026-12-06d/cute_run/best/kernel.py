"""Built-in template rownorm_cute: one CuTe DSL kernel, one CTA per row.

HF-style RMSNorm in the CuTe DSL: each CTA reduces its row's sum of squares in fp32 (warp
shuffles, then one shared-memory exchange across warps), then normalises, casts to the input
dtype and scales by the weight. The row is split into chunks of ``VEC`` elements (16 bytes at
bf16 and VEC 8), each copied to registers with one vector access: the tensors are handed over
with a 16-byte alignment and a row length divisible by the width, so the DSL emits 128-bit
loads and stores. A row whose length or pointers do not allow it is served by the same kernel
compiled at width 1. Compiled once per process, dtype and width with ``cute.compile``; the
row length and count stay dynamic, so one compiled kernel serves every shape.
"""

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
from cutlass.cute.runtime import from_dlpack

# --- knobs ---
THREADS = 256  # threads per CTA (a multiple of 32)
VEC = 8  # elements per vector access (1 = scalar)
# --- semantics ---
EPS = 1e-06
# --- end ---

WARPS = THREADS // 32


@cute.kernel
def _rms_row(mX: cute.Tensor, mW: cute.Tensor, mY: cute.Tensor, eps: cutlass.Float32,
             vec: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    row, _, _ = cute.arch.block_idx()
    n = mX.shape[1]
    chunks = n // vec
    gX = cute.zipped_divide(mX[row, None], (vec,))  # (vec, chunks)
    gY = cute.zipped_divide(mY[row, None], (vec,))
    gW = cute.zipped_divide(mW, (vec,))
    x_reg = cute.make_rmem_tensor(cute.make_layout(vec), mX.element_type)
    w_reg = cute.make_rmem_tensor(cute.make_layout(vec), mW.element_type)
    y_reg = cute.make_rmem_tensor(cute.make_layout(vec), mY.element_type)
    smem = cutlass.utils.SmemAllocator()
    partial = smem.allocate_tensor(cutlass.Float32, cute.make_layout(WARPS), byte_alignment=16)
    acc = cutlass.Float32(0.0)
    for c in cutlass.range(tidx, chunks, THREADS):
        cute.autovec_copy(gX[None, c], x_reg)
        v = x_reg.load().to(cutlass.Float32)
        acc += (v * v).reduce(cute.ReductionOp.ADD, cutlass.Float32(0.0), 0)
    acc = cute.arch.warp_reduction_sum(acc)  # every lane holds the warp's sum
    # every lane stores it (the same value): a lane-0 branch followed by the barrier never
    # finished on an H100 or an H200 (nvidia-cutlass-dsl 4.8.1), each part alone did
    partial[cute.arch.warp_idx()] = acc
    cute.arch.barrier()
    total = cutlass.Float32(0.0)
    for w in cutlass.range_constexpr(WARPS):
        total += partial[w]
    inv = cute.math.rsqrt(total / n.to(cutlass.Float32) + eps)
    for c in cutlass.range(tidx, chunks, THREADS):
        cute.autovec_copy(gX[None, c], x_reg)
        cute.autovec_copy(gW[None, c], w_reg)
        h = (x_reg.load().to(cutlass.Float32) * inv).to(mX.element_type)
        y_reg.store((h.to(cutlass.Float32) * w_reg.load().to(cutlass.Float32)).to(mY.element_type))
        cute.autovec_copy(y_reg, gY[None, c])


@cute.jit
def _rms_launch(mX: cute.Tensor, mW: cute.Tensor, mY: cute.Tensor, eps: cutlass.Float32,
                stream: cuda.CUstream, vec: cutlass.Constexpr):
    _rms_row(mX, mW, mY, eps, vec).launch(grid=(mX.shape[0], 1, 1), block=(THREADS, 1, 1),
                                          stream=stream)


_COMPILED = {}


def _width(*tensors):
    """VEC when every row starts on a 16-byte boundary and splits into whole chunks, else 1."""
    n = tensors[0].shape[-1]
    aligned = all(t.data_ptr() % 16 == 0 for t in tensors)
    return VEC if VEC > 1 and n % VEC == 0 and aligned and (n * tensors[0].element_size()) % 16 == 0 else 1


def _dynamic(t, vec):
    """The tensor with its shape dynamic, its row length known to divide by ``vec`` and its
    pointer by 16 bytes (when ``vec`` > 1), so the copies vectorise."""
    order = tuple(range(t.dim()))  # row-major, said outright: a length-1 mode leaves it ambiguous
    cu = from_dlpack(t, assumed_align=16 if vec > 1 else None)
    cu = cu.mark_compact_shape_dynamic(mode=t.dim() - 1, stride_order=order, divisibility=vec)
    return cu.mark_compact_shape_dynamic(mode=0, stride_order=order) if t.dim() == 2 else cu


def rmsnorm(x, weight):
    """HF LlamaRMSNorm: fp32 normalise, cast to x.dtype, times weight (x and weight share a dtype)."""
    if weight.dtype != x.dtype:
        raise TypeError("rownorm_cute: x and weight must share one dtype")
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    w = weight.contiguous()
    y = torch.empty_like(x2)
    if x2.numel() == 0:
        return y.reshape(x.shape)
    vec = _width(x2, w, y)
    args = (_dynamic(x2, vec), _dynamic(w, vec), _dynamic(y, vec))
    # launch on the caller's current stream (a CPU tensor, compiled only, has none)
    stream = cuda.CUstream(torch.cuda.current_stream(x.device).cuda_stream if x.is_cuda else 0)
    key = (x2.dtype, vec)
    if key not in _COMPILED:
        _COMPILED[key] = cute.compile(_rms_launch, *args, cutlass.Float32(EPS), stream, vec)
    _COMPILED[key](*args, cutlass.Float32(EPS), stream)
    return y.reshape(x.shape)


# --- entry point: rmsnorm (task rmsnorm, row M0.1) ---
def run(x, weight):
    return rmsnorm(x, weight)
