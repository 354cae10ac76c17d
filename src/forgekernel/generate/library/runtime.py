"""forge's launch runtime for kernels written by TorchInductor's Triton code generation.

Pasted into a generated candidate (which must not import forgekernel): launches each Triton
kernel with blocks and warps chosen from its kind, Inductor's reduction hint and this call's
sizes (the knobs below are what forge's search tunes), and provides the helpers Inductor's
wrapper calls (allocation on the inputs' device, strided views). Sizes reach the kernels as
constexprs (one compile per distinct size, index arithmetic dividing by constants). The CPU
interpreter's extras are in the interpret file, pasted after this one.
"""

import torch
import triton
import triton.language as tl

# --- knobs ---
RT_PW_BLOCK = 1024
RT_PW_WARPS = 4
RT_TILE_X = 64
RT_TILE_Y = 32
RT_TILE_WARPS = 4
RT_RED_RBLOCK = 2048
RT_RED_TILE = 4096
RT_RED_OUTER_XBLOCK = 64
RT_RED_OUTER_RBLOCK = 8
RT_RED_WARPS = 8
RT_FUSE_TAIL = 0
# --- end ---

_RT_GRID_Y_MAX = 65535
_RT_INT32_MAX = 2**31 - 1


@triton.jit
def _rt_probe():
    pass


RT_INTERPRET = type(_rt_probe).__name__ == "InterpretedFunction"
"""True under TRITON_INTERPRET=1 (the CPU interpreter): libdevice is emulated below."""


def _rt_pow2(n):
    n = max(int(n), 1)
    return 1 << (n - 1).bit_length()


def _rt_clamp_pow2(n, cap):
    return max(1, min(_rt_pow2(n), _rt_pow2(cap)))


def _rt_reduction_blocks(hint, x, r, persistent=False):
    """(XBLOCK, R0_BLOCK, warps) for a reduction of x rows of length r: looped (the R block
    a knob), or persistent (one R block covers the whole row)."""
    if persistent:
        rb = _rt_pow2(r)
        xb = _rt_clamp_pow2(x, max(1, RT_RED_TILE // rb))
    elif hint == "OUTER":
        xb, rb = _rt_clamp_pow2(x, RT_RED_OUTER_XBLOCK), _rt_clamp_pow2(r, RT_RED_OUTER_RBLOCK)
    elif hint == "OUTER_TINY":
        xb, rb = _rt_clamp_pow2(x, RT_RED_OUTER_XBLOCK), _rt_clamp_pow2(r, 64)
    else:
        rb = _rt_clamp_pow2(r, RT_RED_RBLOCK)
        xb = _rt_clamp_pow2(x, max(1, RT_RED_TILE // rb))
    warps = max(1, min(RT_RED_WARPS, (xb * rb) // 256))
    return xb, rb, _rt_pow2(warps)


def _rt_grid_y(y, yb):
    """YBLOCK raised until the y grid fits the launch limit."""
    while -(-y // yb) > _RT_GRID_Y_MAX:
        yb *= 2
    return yb


def _rt_reduction_meta(consts, sizes, hint, persistent, rnumel):
    """Block sizes and warps of a reduction kernel: rows along x (and y for a 2-D tiled
    reduction, YBLOCK), the reduced axis along R0_BLOCK (its length ``rnumel`` when the
    kernel has it as a constant rather than an argument)."""
    x, y = sizes.get("xnumel", 1), sizes.get("ynumel", 1)
    r = sizes.get("r0_numel", rnumel or 1)
    xb, rb, warps = _rt_reduction_blocks(hint, x, r, persistent)
    meta = {}
    if "R0_BLOCK" in consts:
        meta["R0_BLOCK"] = rb
    if "XBLOCK" in consts:
        meta["XBLOCK"] = xb
    if "YBLOCK" in consts:  # what the x block leaves of the tile goes to y
        yb = _rt_grid_y(y, _rt_clamp_pow2(y, max(1, RT_RED_TILE // (xb * rb))))
        meta["YBLOCK"] = yb
        warps = _rt_pow2(max(1, min(RT_RED_WARPS, (xb * yb * rb) // 256)))
    if "ZBLOCK" in consts:
        meta["ZBLOCK"] = 1
    return meta, warps


def _rt_pointwise_blocks(consts, sizes):
    """Block sizes and warps of a pointwise kernel (1-D, or 2-D/3-D tiled)."""
    meta = {}
    x = sizes.get("xnumel", 1)
    if "YBLOCK" not in consts:
        meta["XBLOCK"] = _rt_clamp_pow2(x, RT_PW_BLOCK)
        return meta, RT_PW_WARPS
    meta["XBLOCK"] = _rt_clamp_pow2(x, RT_TILE_X)
    y = sizes.get("ynumel", 1)
    meta["YBLOCK"] = _rt_grid_y(y, _rt_clamp_pow2(y, RT_TILE_Y))
    if "ZBLOCK" in consts:
        meta["ZBLOCK"] = 1
    return meta, RT_TILE_WARPS


# ------------------------------------------------------------------ device helpers
# What Inductor's kernels call as ``triton_helpers.X``: the assembler renames those calls
# to ``_th_X``. NaN-propagating min/max as PyTorch's, Welford variance, floor division and
# remainder with Python's signs, arg-min/max with the lowest index on ties.


@triton.jit
def _th_maximum(a, b):
    if a.dtype.is_floating():
        return tl.where((a > b) | (a != a), a, b)
    return tl.maximum(a, b)


@triton.jit
def _th_minimum(a, b):
    if a.dtype.is_floating():
        return tl.where((a < b) | (a != a), a, b)
    return tl.minimum(a, b)


@triton.jit
def _th_max2(a, dim):
    return tl.reduce(a, dim, _th_maximum)


@triton.jit
def _th_min2(a, dim):
    return tl.reduce(a, dim, _th_minimum)


@triton.jit
def _th_or(a, b):
    return a | b


@triton.jit
def _th_any(a, dim):
    return tl.reduce(a, dim, _th_or)


@triton.jit
def _th_mul(a, b):
    return a * b


@triton.jit
def _th_prod(a, dim):
    return tl.reduce(a, dim, _th_mul)


@triton.jit
def _th_promote_to_tensor(x):
    return x + tl.zeros((1,), tl.int1)


@triton.jit
def _th_maximum_with_index(a_value, a_index, b_value, b_index):
    mask = a_value > b_value
    equal = a_value == b_value
    if a_value.dtype.is_floating():
        a_nan = a_value != a_value
        b_nan = b_value != b_value
        mask |= a_nan & (b_nan == 0)
        equal |= a_nan & b_nan
    mask |= equal & (a_index < b_index)
    return tl.where(mask, a_value, b_value), tl.where(mask, a_index, b_index)


@triton.jit
def _th_minimum_with_index(a_value, a_index, b_value, b_index):
    mask = a_value < b_value
    equal = a_value == b_value
    if a_value.dtype.is_floating():
        a_nan = a_value != a_value
        b_nan = b_value != b_value
        mask |= a_nan & (b_nan == 0)
        equal |= a_nan & b_nan
    mask |= equal & (a_index < b_index)
    return tl.where(mask, a_value, b_value), tl.where(mask, a_index, b_index)


@triton.jit
def _th_max_with_index(value, index, dim):
    return tl.reduce((value, index), dim, _th_maximum_with_index)


@triton.jit
def _th_min_with_index(value, index, dim):
    return tl.reduce((value, index), dim, _th_minimum_with_index)


@triton.jit
def _th_welford_reduce(value, mean, m2, weight, first_iteration):
    if first_iteration:
        new_weight = tl.full(weight.shape, 1, weight.dtype)
        new_mean = value
        new_m2 = tl.zeros_like(m2)
    else:
        delta = value - mean
        new_weight = weight + 1
        new_mean = mean + delta / new_weight
        new_m2 = m2 + delta * (value - new_mean)
    return new_mean, new_m2, new_weight


@triton.jit
def _th_welford_combine(mean_1, m2_1, weight_1, mean_2, m2_2, weight_2):
    delta = mean_2 - mean_1
    new_weight = weight_1 + weight_2
    share = tl.where(new_weight == 0.0, 0.0, weight_2 / new_weight)
    return mean_1 + delta * share, m2_1 + m2_2 + delta * delta * weight_1 * share, new_weight


@triton.jit
def _th_welford(mean, m2, weight, dim):
    return tl.reduce((mean, m2, weight), dim, _th_welford_combine)


@triton.jit
def _th_div_floor_integer(a, b):
    quot = a // b
    rem = a % b
    return tl.where((rem != 0) & ((rem < 0) != (b < 0)), quot - 1, quot)


@triton.jit
def _th_remainder_integer(a, b):
    rem = a % b
    return tl.where((rem != 0) & ((rem < 0) != (b < 0)), rem + b, rem)


@triton.jit
def _th_frexp(x):
    """(mantissa, exponent) with x = mantissa * 2**exponent and 0.5 <= |mantissa| < 1, as
    torch.frexp: zeros, infinities and NaNs keep their value with exponent 0. Float32
    arithmetic on the bits: the exponent field is read and replaced by that of 0.5;
    subnormals are scaled by 2**23 first (exact)."""
    x = x.to(tl.float32)
    zero = x == 0
    special = zero | (x != x) | (tl.abs(x) > 3.4028234663852886e38)  # 0, NaN, +-inf
    safe = tl.where(special, 1.0, x)
    tiny = tl.abs(safe) < 1.1754943508222875e-38
    scaled = safe * tl.where(tiny, 8388608.0, 1.0)
    bits = scaled.to(tl.int32, bitcast=True)
    exponent = ((bits >> 23) & 0xFF) - 126 - tl.where(tiny, 23, 0)
    mantissa = ((bits & -2139095041) | 1056964608).to(tl.float32, bitcast=True)  # 0x807FFFFF, 126 << 23
    return tl.where(special, x, mantissa), tl.where(special, 0, exponent)


@triton.jit
def _th_select_one(x, mask, dim, keep_dims=False):
    picked = tl.where(mask, x, tl.zeros_like(x))
    return tl.sum(picked, dim, keep_dims=keep_dims)


_RT_BLOCKS = ("XBLOCK", "YBLOCK", "ZBLOCK", "R0_BLOCK")
_RT_NUMELS = ("xnumel", "ynumel", "znumel", "r0_numel")


@triton.jit
def _rt_tail_kernel(n, EPI: tl.constexpr, epi_args, BLOCK: tl.constexpr, INDEX64: tl.constexpr):
    """A convolution's element-wise tail as a pass of its own over the output."""
    start = tl.program_id(0).to(tl.int64) * BLOCK if INDEX64 else tl.program_id(0) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    EPI(offs, offs < n, epi_args)


def _rt_conv_tail(conv, *args, epilogue):
    """``conv(*args)`` with the element-wise tail ``epilogue`` run on each output tile inside
    the convolution's kernels (RT_FUSE_TAIL = 1) or over the whole output after it (0)."""
    return conv(*args, epilogue=epilogue) if RT_FUSE_TAIL else _rt_tail(conv(*args), epilogue)


def _rt_tail(y, epilogue):
    """The element-wise tail ``epilogue`` as a pass of its own over ``y``."""
    n = y.numel()
    if n:
        _rt_tail_kernel[(-(-n // RT_PW_BLOCK),)](n, EPI=epilogue[0], epi_args=(y, *epilogue[1]),
                                                  BLOCK=RT_PW_BLOCK, INDEX64=n + RT_PW_BLOCK > _RT_INT32_MAX,
                                                  num_warps=RT_PW_WARPS)
    return y


def _rt_aten_conv(x, w, bias, stride, padding, dilation, transposed, output_padding, groups, epilogue=None,
                  channels_last=False):
    """PyTorch's convolution (cuDNN) where the task leaves it to the library (CONV_LIBRARY 1; 2: on
    channels-last copies, the output copied back); then the tail, if any, as a pass of its own."""
    moved = channels_last and x.dim() in (4, 5) and x.is_contiguous() and w.is_contiguous()
    if moved:
        fmt = torch.channels_last if x.dim() == 4 else torch.channels_last_3d
        x, w = x.contiguous(memory_format=fmt), w.contiguous(memory_format=fmt)
    y = torch.ops.aten.convolution.default(x, w, bias, list(stride), list(padding), list(dilation),
                                           bool(transposed), list(output_padding), int(groups))
    y = y.contiguous() if moved else y  # the layout the tail and the caller were lowered for
    return y if epilogue is None else _rt_tail(y, epilogue)


class _RtLaunch:
    """One Inductor kernel: computes its launch from the call's sizes (once per distinct
    sizes: a call with sizes seen before only launches), then launches it."""

    def __init__(self, fn, kind, signature, hint, rnumel=None, unmasked=()):
        self.fn, self.kind, self.hint, self.rnumel = fn, kind, hint, rnumel
        self.unmasked = unmasked  # (block, length) of axes Inductor left unmasked: blocks must divide
        # every parameter but the launch blocks comes from the call (a size Inductor made a
        # constexpr, xnumel = 1 of a full reduction, included)
        self.params = [k for k in signature if k not in _RT_BLOCKS]
        self.consts = [k for k in signature if k in _RT_BLOCKS]
        # the launch depends on these sizes only
        self.numels = [i for i, k in enumerate(self.params) if k in _RT_NUMELS]
        self.tensors = [i for i, k in enumerate(self.params) if signature[k].startswith("*")]
        self.plans = {}

    def plan(self, args):
        """(grid, block sizes, warps) for a call with these arguments."""
        sizes = dict(zip(self.params, args, strict=False))
        if self.kind in ("reduction", "persistent_reduction"):
            meta, warps = _rt_reduction_meta(self.consts, sizes, self.hint,
                                             self.kind == "persistent_reduction", self.rnumel)
        else:
            meta, warps = _rt_pointwise_blocks(self.consts, sizes)
        for key, numel in self.unmasked:  # a larger block than Inductor's would store past the end
            while meta.get(key, 1) > 1 and sizes.get(numel, self.rnumel or 1) % meta[key]:
                meta[key] //= 2
        grid = (-(-sizes.get("xnumel", 1) // meta.get("XBLOCK", 1)),
                -(-sizes.get("ynumel", 1) // meta.get("YBLOCK", 1)),
                -(-sizes.get("znumel", 1) // meta.get("ZBLOCK", 1)))
        return grid, meta, warps

    def run(self, *args, stream=None):
        key = tuple(args[i] for i in self.numels)
        found = self.plans.get(key)
        if found is None:
            found = self.plans[key] = self.plan(args)
        grid, meta, warps = found
        if min(grid) <= 0:  # nothing to compute (a size that came out 0, or below: see _rt_empty)
            return
        for i in self.tensors:
            value = args[i]
            if value.untyped_storage().nbytes() // max(value.element_size(), 1) > _RT_INT32_MAX:
                raise ValueError("this kernel was generated with 32-bit indexing; a tensor of "
                                 "more than 2**31 elements needs a 64-bit variant")
        self.fn[grid](*args, num_warps=warps, **meta)


_RT_DEVICE = ["cpu"]


def _rt_empty(size, stride, dtype=None, device=None):
    # a size written for the traced example (``n - 2`` of a second difference, say) can come out
    # below 0 at a workload the example did not cover: torch's own result is then empty
    return torch.empty_strided([max(0, s) for s in size], stride, dtype=dtype, device=_RT_DEVICE[0])


def _rt_bind_device(flat):
    """Allocate the call's buffers where its first tensor argument lives."""
    for value in flat:
        if isinstance(value, torch.Tensor):
            _RT_DEVICE[0] = value.device
            return


def reinterpret_tensor(t, size, stride, offset):
    return t.as_strided([max(0, s) for s in size], stride, t.storage_offset() + offset)


def assert_size_stride(t, size, stride, where=None):
    if tuple(t.shape) != tuple(size):
        raise ValueError(f"{where or 'argument'} has shape {tuple(t.shape)}, expected {tuple(size)}")
    if t.numel() == 0:  # no element to reach: any strides will do
        return
    for dim, (have, want) in enumerate(zip(t.stride(), stride, strict=True)):
        if t.shape[dim] > 1 and have != want:
            raise ValueError(f"{where or 'argument'} has strides {t.stride()}, expected {tuple(stride)} "
                             "(the generated kernels assume this layout)")


def assert_alignment(t, alignment, where=None):
    pass


def get_raw_stream(index):
    return 0


def device(type=None, index=None):
    return _RT_DEVICE[0]


empty_strided_cpu = empty_strided_cuda = empty_strided = _rt_empty
