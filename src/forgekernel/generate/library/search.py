"""forge library search: device helpers for Inductor's kernels that search, pasted into a
generated candidate only when one of its kernels calls them (the runtime holds the others).

``_th_bucketize_binary_search``: what Inductor's ``bucketize`` lowering calls.
"""

import triton
import triton.language as tl


@triton.jit
def _th_bucketize_binary_search(values, boundaries_ptr, BOUNDARIES_SIZE, BOUNDARIES_UNDERLYING_NUMEL,
                                BOUNDARIES_STRIDE, boundary_indices, indexing_dtype, right,
                                sorter_ptr, SORTER_STRIDE, sorter_indices):
    # For each value, how many boundaries of its set lie below it (at or below it when
    # ``right``): a binary search over the size + 1 possible answers, halving them each step;
    # boundaries past the set or the tensor read as absent. ``sorter_ptr``: the boundaries'
    # order, when they are not stored sorted.
    lo = tl.zeros(values.shape, dtype=indexing_dtype)
    hi = tl.full(values.shape, BOUNDARIES_SIZE, dtype=indexing_dtype)
    left = BOUNDARIES_SIZE + 1
    while left > 1:
        mid = (lo + hi) // 2
        there = (mid < BOUNDARIES_SIZE) & (boundary_indices + mid * BOUNDARIES_STRIDE
                                           < BOUNDARIES_UNDERLYING_NUMEL)
        at = mid
        if sorter_ptr is not None:
            at = tl.load(sorter_ptr + sorter_indices + SORTER_STRIDE * mid, mask=there, other=0)
        bound = tl.load(boundaries_ptr + boundary_indices + BOUNDARIES_STRIDE * at, mask=there, other=0)
        if right:
            below = there & (bound <= values)
        else:
            below = there & (bound < values)
        lo = tl.where(below, mid + 1, lo)
        hi = tl.where(below, hi, mid)
        left = (left + 1) // 2
    return lo
