"""Built-in template gated_flat: element-wise gated activation over the flattened tensors.

``silu(gate) * up`` with PyTorch's bf16 rounding order (silu rounded to the input dtype,
then the product rounded): one 1-D program per BLOCK contiguous elements.
"""

import torch
import triton
import triton.language as tl

# --- knobs ---
BLOCK = 4096  # elements per program
NUM_WARPS = 8
# --- semantics ---
# --- end ---


@triton.jit
def _gated_flat(G, U, Y, n, BLOCK_: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK_ + tl.arange(0, BLOCK_)
    mask = offs < n
    g = tl.load(G + offs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(U + offs, mask=mask, other=0.0).to(tl.float32)
    act = (g / (1.0 + tl.exp(-g))).to(G.dtype.element_ty).to(tl.float32)
    tl.store(Y + offs, (act * u).to(Y.dtype.element_ty), mask=mask)


def _promote(a, b):
    """Result dtype of a binary op (no call into torch when the dtypes agree)."""
    return a if a == b else torch.promote_types(a, b)


def swiglu(gate, up):
    """silu(gate) * up element-wise (same shapes), in the inputs' dtype."""
    g = gate.contiguous()
    u = up.contiguous()
    y = torch.empty(g.shape, dtype=_promote(gate.dtype, up.dtype), device=g.device)
    n = g.numel()
    block = min(BLOCK, max(16, 1 << (n - 1).bit_length()))
    _gated_flat[(-(-n // block),)](g, u, y, n, BLOCK_=block, num_warps=NUM_WARPS)
    return y
