"""forge library conv: a Triton stand-in for aten.convolution (implicit GEMM).

``convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding,
groups)``: ``torch.ops.aten.convolution`` for 1-D, 2-D and 3-D inputs, any strides; the
output channels-last when the input or the weight is (as aten on the GPU).

``_conv_kernel`` treats every convolution as 3-D and as one GEMM per group (M: output
positions, N: the group's output channels, K: taps x the group's input channels), tiles
gathered with computed indices and masks (the geometry is constexpr: index divisions by
constants), products on ``tl.dot`` with fp32 accumulation, the bias added before the store,
the weight repacked per call to [groups, taps * Cin/groups, Cout/groups]. K is walked tap by
tap in blocks of input channels (16 or more per group), else as one flat taps x channels
range. A strided transposed convolution without dilation runs as one stride-1 launch per
output phase (every tap walked contributes). NCDHW tiles are moved transposed: the output
always, the input in place for 1x1 kernels and the flat walk, else from a channels-last copy
(faster on the H200 for 3x3, 3x3x3, transposed k4). Thin groups (under 16 output channels
and at most 16 input x output channels per group: depthwise and the like) run
``_conv_direct_kernel``: multiply-adds over a [positions, channels] tile.

``epilogue=(fn, args)``: after each tile is stored (and a barrier) ``fn(offsets, mask, (y,
*args))`` runs on it, offsets from y's start (an in-place element-wise pass: generate/fuse.py).

Knobs (header below): CONV_BLOCK_M/N/K (tile sizes, clamped to the next power of two >= the
dimension, at least 16), CONV_NUM_WARPS, CONV_NUM_STAGES, CONV_ALLOW_TF32 (1: fp32 inputs on
tf32 tensor cores, 0: "ieee" products), CONV_DIRECT_BLOCK/WARPS (the direct kernel's tile in
elements, warps), CONV_COPY_NHWC (0: gather an NCDHW input in place, never copied),
CONV_LIBRARY (read by the candidate's call site: 1 leaves the convolution to PyTorch, cuDNN
with its own TF32 setting, the epilogue a pass of its own, 2 the same on channels-last copies;
only where the task's ``[policy] library_ops`` lists ``convolution``). Tiles upcast on CPU.
"""

import math

import torch
import triton
import triton.language as tl

# --- knobs ---
CONV_BLOCK_M = 128
CONV_BLOCK_N = 64
CONV_BLOCK_K = 32
CONV_NUM_WARPS = 8
CONV_NUM_STAGES = 3
CONV_ALLOW_TF32 = 1
CONV_DIRECT_BLOCK = 1024
CONV_DIRECT_WARPS = 4
CONV_COPY_NHWC = 1
CONV_LIBRARY = 0
# --- end ---

_conv_flat_below = 16  # input channels per group under which K is one flat taps x channels range
_conv_cpu_blocks = (1024, 128, 128)  # the interpreter pays per program x step, not per element
_conv_cpu_direct = 65536


@triton.jit
def _conv_in(o, k, size, stride, pad, dil, TRANSPOSED: tl.constexpr):
    """Input index feeding output index ``o`` through kernel tap ``k``, and whether it exists."""
    if TRANSPOSED:
        t = o + pad - k * dil
        i = t // stride
        ok = (t >= 0) & (i * stride == t) & (i < size)
    else:
        i = o * stride - pad + k * dil
        ok = (i >= 0) & (i < size)
    return i, ok


@triton.jit
def _conv_in3(od, oh, ow, kd, kh, kw, ID, IH, IW, sd, sh, sw, pd, ph, pw, dd, dh, dw,
              s_xd, s_xh, s_xw, TRANSPOSED: tl.constexpr):
    """Spatial offset of the input element behind (output position, tap), and whether it exists."""
    i_d, ok_d = _conv_in(od, kd, ID, sd, pd, dd, TRANSPOSED)
    i_h, ok_h = _conv_in(oh, kh, IH, sh, ph, dh, TRANSPOSED)
    i_w, ok_w = _conv_in(ow, kw, IW, sw, pw, dw, TRANSPOSED)
    return i_d * s_xd + i_h * s_xh + i_w * s_xw, ok_d & ok_h & ok_w


@triton.jit
def _conv_rows(v, M_MAJOR: tl.constexpr):
    """A per-row (output position) vector laid along the A tile's M axis."""
    if M_MAJOR:
        return v[None, :]
    else:
        return v[:, None]


@triton.jit
def _conv_cols(v, M_MAJOR: tl.constexpr):
    """A per-column (reduction index) vector laid along the A tile's K axis."""
    if M_MAJOR:
        return v[:, None]
    else:
        return v[None, :]


@triton.jit
def _conv_position(rm, OD, OH, OW):
    """(n, od, oh, ow) of flattened output positions ``rm``."""
    return rm // (OW * OH * OD), (rm // (OW * OH)) % OD, (rm // OW) % OH, rm % OW


@triton.jit
def _conv_a_tile(x_ptr, x_rows, m_ok, od, oh, ow, it, CIN_G, KRED, ID, IH, IW, KH, KW,
                 sd, sh, sw, pd, ph, pw, dd, dh, dw, s_xc, s_xd, s_xh, s_xw,
                 TRANSPOSED: tl.constexpr, FLAT_K: tl.constexpr, M_MAJOR: tl.constexpr,
                 BLOCK_K: tl.constexpr):
    """Step ``it`` of the reduction: the gathered [BLOCK_M, BLOCK_K] input tile, its K indices.

    FLAT_K walks K = (tap, channel) pairs as one range (index math per element); otherwise
    one tap and BLOCK_K channels per step (index math per row). M_MAJOR loads the tile
    transposed, so that neighbouring threads read neighbouring output positions (NCDHW).
    """
    if FLAT_K:
        k = it * BLOCK_K + tl.arange(0, BLOCK_K)
        k_ok = k < KRED
        c = k % CIN_G
        tap = _conv_cols(k // CIN_G, M_MAJOR)
        sp, sp_ok = _conv_in3(_conv_rows(od, M_MAJOR), _conv_rows(oh, M_MAJOR),
                              _conv_rows(ow, M_MAJOR), tap // (KW * KH), (tap // KW) % KH,
                              tap % KW, ID, IH, IW, sd, sh, sw, pd, ph, pw, dd, dh, dw,
                              s_xd, s_xh, s_xw, TRANSPOSED)
    else:
        n_cblk = tl.cdiv(CIN_G, BLOCK_K)
        tap = it // n_cblk
        c = (it - tap * n_cblk) * BLOCK_K + tl.arange(0, BLOCK_K)
        k = tap * CIN_G + c
        k_ok = c < CIN_G
        sp, sp_ok = _conv_in3(od, oh, ow, tap // (KW * KH), (tap // KW) % KH, tap % KW,
                              ID, IH, IW, sd, sh, sw, pd, ph, pw, dd, dh, dw,
                              s_xd, s_xh, s_xw, TRANSPOSED)
        sp = _conv_rows(sp, M_MAJOR)
        sp_ok = _conv_rows(sp_ok, M_MAJOR)
    offs = _conv_rows(x_rows, M_MAJOR) + sp + _conv_cols(c * s_xc, M_MAJOR)
    mask = _conv_rows(m_ok, M_MAJOR) & sp_ok & _conv_cols(k_ok, M_MAJOR)
    a = tl.load(x_ptr + offs, mask=mask, other=0.0)
    if M_MAJOR:
        a = tl.trans(a)
    return a, k, k_ok


@triton.jit
def _conv_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, M, COUT_G, CIN_G: tl.constexpr, KRED: tl.constexpr, ID, IH, IW,
                 OD: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr, KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, sd: tl.constexpr, sh: tl.constexpr,
                 sw: tl.constexpr, pd: tl.constexpr, ph: tl.constexpr, pw: tl.constexpr, dd: tl.constexpr,
                 dh: tl.constexpr, dw: tl.constexpr, s_xn, s_xc, s_xd, s_xh, s_xw, s_wg, s_wk, s_wn, s_yn, s_yc, s_yd, s_yh, s_yw,
                 HAS_BIAS: tl.constexpr, TRANSPOSED: tl.constexpr, FLAT_K: tl.constexpr,
                 M_MAJOR: tl.constexpr, Y_M_MAJOR: tl.constexpr, INDEX64: tl.constexpr,
                 UPCAST: tl.constexpr, PRECISION: tl.constexpr, BLOCK_M: tl.constexpr,
                 BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, y_off, EPI: tl.constexpr, epi_args):
    tiles_n = tl.cdiv(COUT_G, BLOCK_N)
    pid_m = tl.program_id(0) // tiles_n
    g = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = (tl.program_id(0) % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    m_ok = rm < M
    n_ok = rn < COUT_G
    if INDEX64:  # offsets past 2**31 elements
        rm = rm.to(tl.int64)
        g = g.to(tl.int64)
    n, od, oh, ow = _conv_position(rm, OD, OH, OW)
    x_rows = n * s_xn + g * CIN_G * s_xc
    w_cols = w_ptr + g * s_wg + rn[None, :] * s_wn
    steps = tl.cdiv(KRED, BLOCK_K) if FLAT_K else KD * KH * KW * tl.cdiv(CIN_G, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for it in range(0, steps):
        a, k, k_ok = _conv_a_tile(x_ptr, x_rows, m_ok, od, oh, ow, it, CIN_G, KRED, ID, IH, IW,
                                  KH, KW, sd, sh, sw, pd, ph, pw, dd, dh, dw, s_xc, s_xd, s_xh,
                                  s_xw, TRANSPOSED, FLAT_K, M_MAJOR, BLOCK_K)
        b = tl.load(w_cols + k[:, None] * s_wk, mask=k_ok[:, None] & n_ok[None, :], other=0.0)
        if UPCAST:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    if HAS_BIAS:
        acc += tl.load(bias_ptr + g * COUT_G + rn, mask=n_ok, other=0.0).to(tl.float32)[None, :]
    y_rows = n * s_yn + od * s_yd + oh * s_yh + ow * s_yw
    y_cols = (g * COUT_G + rn) * s_yc
    if Y_M_MAJOR:  # NCDHW output: stored transposed, neighbouring threads on neighbouring positions
        offs, mask, acc = y_rows[None, :] + y_cols[:, None], n_ok[:, None] & m_ok[None, :], tl.trans(acc)
    else:
        offs, mask = y_rows[:, None] + y_cols[None, :], m_ok[:, None] & n_ok[None, :]
    _conv_store(y_ptr, offs, mask, acc, y_off, EPI, epi_args)


@triton.jit
def _conv_store(y_ptr, offs, mask, acc, y_off, EPI: tl.constexpr, epi_args):
    """Store a tile; then the fused epilogue, if any, over its elements (y_off: the offset of
    y_ptr from the start of the tensor the epilogue indexes, nonzero for a phase's view)."""
    tl.store(y_ptr + offs, acc.to(y_ptr.dtype.element_ty), mask=mask)
    if EPI is not None:
        tl.debug_barrier()  # the tile's stores are seen by every thread of the program
        EPI(y_off + offs, mask, epi_args)


@triton.jit
def _conv_direct_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, M, COUT, COUT_G: tl.constexpr, CIN_G: tl.constexpr, ID, IH, IW,
                        OD: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr, KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, sd: tl.constexpr,
                        sh: tl.constexpr, sw: tl.constexpr, pd: tl.constexpr, ph: tl.constexpr, pw: tl.constexpr,
                        dd: tl.constexpr, dh: tl.constexpr, dw: tl.constexpr, s_xn, s_xc, s_xd, s_xh, s_xw, s_wg, s_wk, s_wn,
                        s_yn, s_yc, s_yd, s_yh, s_yw, HAS_BIAS: tl.constexpr,
                        TRANSPOSED: tl.constexpr, INDEX64: tl.constexpr, BLOCK_M: tl.constexpr,
                        BLOCK_C: tl.constexpr, y_off, EPI: tl.constexpr, epi_args):
    """Direct convolution of a [BLOCK_M positions, BLOCK_C output channels] tile: for every
    tap and input channel of the group, one gathered load and one multiply-add (fp32)."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    co = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    m_ok, c_ok = rm < M, co < COUT
    if INDEX64:
        rm, co = rm.to(tl.int64), co.to(tl.int64)
    n, od, oh, ow = _conv_position(rm, OD, OH, OW)
    g = co // COUT_G
    x_base = x_ptr + (n * s_xn)[:, None] + (g * CIN_G * s_xc)[None, :]
    w_base = w_ptr + g * s_wg + (co - g * COUT_G) * s_wn
    acc = tl.zeros((BLOCK_M, BLOCK_C), dtype=tl.float32)
    for tap in range(0, KD * KH * KW):
        sp, sp_ok = _conv_in3(od, oh, ow, tap // (KW * KH), (tap // KW) % KH, tap % KW,
                              ID, IH, IW, sd, sh, sw, pd, ph, pw, dd, dh, dw,
                              s_xd, s_xh, s_xw, TRANSPOSED)
        mask = (m_ok & sp_ok)[:, None] & c_ok[None, :]
        for ci in range(0, CIN_G):
            xv = tl.load(x_base + sp[:, None] + ci * s_xc, mask=mask, other=0.0)
            wv = tl.load(w_base + (tap * CIN_G + ci) * s_wk, mask=c_ok, other=0.0)
            acc += xv.to(tl.float32) * wv.to(tl.float32)[None, :]
    if HAS_BIAS:
        acc += tl.load(bias_ptr + co, mask=c_ok, other=0.0).to(tl.float32)[None, :]
    y_rows = n * s_yn + od * s_yd + oh * s_yh + ow * s_yw
    _conv_store(y_ptr, y_rows[:, None] + (co * s_yc)[None, :], m_ok[:, None] & c_ok[None, :], acc,
                y_off, EPI, epi_args)


def _conv_tuple(v, nd, fill):
    """A per-dimension parameter as a 3-tuple (leading unit dims get ``fill``)."""
    v = [int(e) for e in v] if isinstance(v, (list, tuple)) else [int(v)]
    v = v * nd if len(v) == 1 else v
    if len(v) != nd:
        raise RuntimeError(f"expected {nd} values per spatial dimension, got {v}")
    return (fill,) * (3 - nd) + tuple(v)


def _conv_as3d(t, nd):
    """Shape and strides of (N, C, *spatial) with nd spatial dims as (N, C, D, H, W)."""
    pad = 3 - nd
    return ((*t.shape[:2], *(1,) * pad, *t.shape[2:]),
            (*t.stride()[:2], *(0,) * pad, *t.stride()[2:]))


def _conv_channels_last(t):
    if t.dim() not in (4, 5) or t.is_contiguous():
        return False
    fmt = torch.channels_last if t.dim() == 4 else torch.channels_last_3d
    return t.is_contiguous(memory_format=fmt)


def _conv_out_shape(isz, ksz, s, p, d, op, transposed):
    if transposed:
        return tuple((i - 1) * st - 2 * pa + di * (k - 1) + o + 1
                     for i, k, st, pa, di, o in zip(isz, ksz, s, p, d, op, strict=True))
    return tuple((i + 2 * pa - di * (k - 1) - 1) // st + 1
                 for i, k, st, pa, di in zip(isz, ksz, s, p, d, strict=True))


def _conv_pack(weight, groups, transposed):
    """Weight as [groups, taps * Cin/groups, Cout/groups] (tap-major, channel-minor rows)."""
    kvol = math.prod(weight.shape[2:])
    w = weight.reshape(groups, weight.shape[0] // groups, weight.shape[1], kvol)
    # (Cin, Cout/g, *k) transposed, else (Cout, Cin/g, *k) -> (g, taps, Cin/g, Cout/g)
    w = w.permute(0, 3, 1, 2) if transposed else w.permute(0, 3, 2, 1)
    return w.reshape(groups, kvol * w.shape[2], w.shape[3])


def _conv_m_major(xs, xst):
    """Whether output positions, not channels, are the input's fast axis (NCDHW-like strides)."""
    return xs[1] > 1 and xs[4] > 1 and abs(xst[4]) < abs(xst[1])


def _conv_gatherable(x, nd, cin_g, k3):
    """x, or (CONV_COPY_NHWC) a channels-last copy of it when the tap-major walk would gather it
    NCDHW. On the H200 (bf16, benchmarks/results/library_h200_2026-12-03_6ad3616.json, before the
    geometry was compiled in) copying first was 2.3x to 5.5x faster for 3x3, 3x3x3 and transposed
    k4 convolutions; the in-kernel NCDHW gather won for 1x1 kernels and the flat walk."""
    if not CONV_COPY_NHWC or cin_g < _conv_flat_below or math.prod(k3) == 1:
        return x
    if not _conv_m_major(*_conv_as3d(x, nd)):
        return x
    return x.movedim(1, -1).contiguous().movedim(-1, 1)


def _conv_block(dim, knob):
    return min(knob, max(16, 1 << (max(int(dim), 1) - 1).bit_length()))


def _conv_span(t):
    """Elements from a tensor's first to its last element (more than numel for a strided view)."""
    return 1 + sum((n - 1) * abs(st) for n, st in zip(t.shape, t.stride(), strict=True))


def _conv_alloc(x, weight, shape):
    """The output, channels-last when x or weight is (aten's layout on the GPU)."""
    fmt = torch.contiguous_format
    if _conv_channels_last(x) or _conv_channels_last(weight):
        fmt = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
    return torch.empty(shape, dtype=x.dtype, device=x.device, memory_format=fmt)


def _conv_launch(x, wp, bias, y, nd, groups, cin_g, k3, s3, p3, d3, transposed, epi, y_off=0):
    """One launch of _conv_kernel: x, y seen as 3-D convolutions, wp the packed weight."""
    (nb, _, i_d, i_h, i_w), xst = _conv_as3d(x, nd)
    (_, _, o_d, o_h, o_w), yst = _conv_as3d(y, nd)
    cout_g, kred, m = wp.shape[2], wp.shape[1], nb * o_d * o_h * o_w
    flat = cin_g < _conv_flat_below
    knobs = _conv_cpu_blocks if x.device.type == "cpu" else (CONV_BLOCK_M, CONV_BLOCK_N, CONV_BLOCK_K)
    bm, bn = _conv_block(m, knobs[0]), _conv_block(cout_g, knobs[1])
    bk = _conv_block(kred if flat else cin_g, knobs[2])
    fp32 = x.dtype == torch.float32
    _conv_kernel[(-(-m // bm) * -(-cout_g // bn), groups)](
        x, wp if wp.numel() else y, bias if bias is not None else y, y, m, cout_g, cin_g, kred,
        i_d, i_h, i_w, o_d, o_h, o_w, *k3, *s3, *p3, *d3, *xst, *wp.stride(), *yst,
        HAS_BIAS=bias is not None, TRANSPOSED=bool(transposed), FLAT_K=flat,
        M_MAJOR=_conv_m_major((nb, x.shape[1], i_d, i_h, i_w), xst),
        Y_M_MAJOR=_conv_m_major((nb, y.shape[1], o_d, o_h, o_w), yst),
        INDEX64=max(_conv_span(x), _conv_span(y)) >= 2**31, UPCAST=x.device.type == "cpu" and not fp32,
        PRECISION="ieee" if fp32 and not CONV_ALLOW_TF32 else "tf32",
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, y_off=y_off, EPI=epi[0], epi_args=epi[1],
        num_warps=min(CONV_NUM_WARPS, max(1, bm * bn // 256)), num_stages=CONV_NUM_STAGES)


def _conv_direct_launch(x, wp, bias, y, nd, cin_g, k3, s3, p3, d3, transposed, epi):
    """One launch of _conv_direct_kernel (any layout: NCDHW tiles one channel per program)."""
    (nb, _, i_d, i_h, i_w), xst = _conv_as3d(x, nd)
    (_, cout, o_d, o_h, o_w), yst = _conv_as3d(y, nd)
    m = nb * o_d * o_h * o_w
    cpu = x.device.type == "cpu"  # the interpreter pays per program step: channels tiled always
    elems = _conv_cpu_direct if cpu else CONV_DIRECT_BLOCK
    m_major = not cpu and _conv_m_major((nb, x.shape[1], i_d, i_h, i_w), xst)
    bc = 1 if m_major else min(64, 1 << (cout - 1).bit_length(), elems)
    bm = min(max(1, elems // bc), max(16, 1 << (m - 1).bit_length()))
    _conv_direct_kernel[(-(-m // bm), -(-cout // bc))](
        x, wp, bias if bias is not None else y, y, m, cout, wp.shape[2], cin_g,
        i_d, i_h, i_w, o_d, o_h, o_w, *k3, *s3, *p3, *d3, *xst, *wp.stride(), *yst,
        HAS_BIAS=bias is not None, TRANSPOSED=bool(transposed),
        INDEX64=max(_conv_span(x), _conv_span(y)) >= 2**31, BLOCK_M=bm, BLOCK_C=bc, y_off=0,
        EPI=epi[0], epi_args=epi[1], num_warps=min(CONV_DIRECT_WARPS, max(1, bm * bc // 128)))


def convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups,
                epilogue=None):
    """aten.convolution: (N, Cin, *sp) * weight -> (N, Cout, *out_sp) in x's dtype; then
    ``epilogue`` (fn, args), if given, fused over the output (module docstring)."""
    nd = x.dim() - 2
    if nd not in (1, 2, 3) or weight.dim() != x.dim():
        raise RuntimeError(f"convolution of a {x.dim()}-D input by a {weight.dim()}-D weight")
    if x.dtype != weight.dtype:
        raise RuntimeError(f"input {x.dtype} and weight {weight.dtype} differ")
    groups = int(groups)
    s3, p3, d3 = (_conv_tuple(stride, nd, 1), _conv_tuple(padding, nd, 0),
                  _conv_tuple(dilation, nd, 1))
    op3 = _conv_tuple(output_padding, nd, 0)
    cin_g = x.shape[1] // groups
    cout = weight.shape[1] * groups if transposed else weight.shape[0]
    k3 = _conv_as3d(weight, nd)[0][2:]
    osz = _conv_out_shape(_conv_as3d(x, nd)[0][2:], k3, s3, p3, d3, op3, transposed)
    y = _conv_alloc(x, weight, (x.shape[0], cout, *osz[3 - nd:]))
    if y.numel() == 0:
        return y
    epi = (None, (0,)) if epilogue is None else (epilogue[0], (y, *epilogue[1]))
    if cout // groups < 16 and cin_g * (cout // groups) <= 16:  # thin groups: no product tiles
        _conv_direct_launch(x, _conv_pack(weight, groups, transposed), bias, y, nd, cin_g, k3,
                            s3, p3, d3, transposed, epi)
        return y
    xg = _conv_gatherable(x, nd, cin_g, k3)
    if transposed and max(s3) > 1 and d3 == (1, 1, 1):
        _conv_phases(xg, weight, bias, y, nd, groups, cin_g, k3, s3, p3, epi)
        return y
    wp = _conv_pack(weight, groups, transposed)
    _conv_launch(xg, wp, bias, y, nd, groups, cin_g, k3, s3, p3, d3, transposed, epi)
    return y


def _conv_phases(x, weight, bias, y, nd, groups, cin_g, k3, s3, p3, epi):
    """A strided transposed convolution as one stride-1 transposed convolution per output phase.

    Output o (per dimension) receives input i through tap k when o + pad - k = i * s, so the
    outputs o = o0 + t*s of one phase o0 use only the taps k = k0 + j*s with k0 = (o0 + pad)
    mod s, and read i = t - j + c with c = (o0 + pad - k0) / s (>= 0): a transposed
    convolution with stride 1 and padding c over the sub-sampled kernel, written into the
    strided view of y. Every tap walked contributes, instead of 1 in s per dimension; a phase
    no tap reaches (kernel smaller than the stride) is a launch of no steps (bias only)."""
    lead = (slice(None), slice(None))
    for phase in range(s3[0] * s3[1] * s3[2]):
        o0 = (phase // (s3[1] * s3[2]), (phase // s3[2]) % s3[1], phase % s3[2])
        k0 = tuple((o + p) % st for o, p, st in zip(o0, p3, s3, strict=True))
        c = tuple((o + p - k) // st for o, p, k, st in zip(o0, p3, k0, s3, strict=True))
        yv = y[lead + tuple(slice(o, None, st) for o, st in zip(o0[3 - nd:], s3[3 - nd:], strict=True))]
        if yv.numel() == 0:
            continue
        wv = weight[lead + tuple(slice(k, None, st) for k, st in zip(k0[3 - nd:], s3[3 - nd:], strict=True))]
        kv = tuple(max(0, -(-(k - k_0) // st)) for k, k_0, st in zip(k3, k0, s3, strict=True))
        _conv_launch(x, _conv_pack(wv, groups, True), bias, yv, nd, groups, cin_g, kv,
                     (1, 1, 1), c, (1, 1, 1), True, epi, yv.storage_offset() - y.storage_offset())
