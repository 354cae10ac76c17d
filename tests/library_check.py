"""Check forge's library kernels (src/forgekernel/generate/library) against float64 torch.

Run as a script in a fresh process; on the CPU set TRITON_INTERPRET=1 first (the tests do):
``python tests/library_check.py [--device cpu|cuda] [--only gemm|conv|sort|scatter] [--knobs JSON]
[--dtypes float32,bfloat16]``.
The library files are loaded the way a generated candidate holds them (their text executed
as one module), each case runs on small shapes and is compared with the aten op evaluated on
float64 copies. Prints one JSON line per case: name, dtype, err (1.0 = at the tolerance) and
ok; "layout_ok" says the result has aten's strides, "is_out" that ``out=`` was returned.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import tempfile
import types
from pathlib import Path

import torch
import triton
import triton.language as tl

LIB = Path(__file__).resolve().parents[1] / "src" / "forgekernel" / "generate" / "library"
TOL = {torch.float32: 1e-2, torch.float16: 5e-3, torch.bfloat16: 2e-2}
"""Error allowed relative to the output's RMS on top of one unit in the last place of each
element: fp32 runs with tf32 products on a GPU, bf16/fp16 round their fp32 results."""
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
aten = torch.ops.aten


def paste(names: tuple[str, ...], where: Path) -> types.ModuleType:
    """The library files pasted into one file ``where`` (as the generator does), imported.

    A file, not exec'd text: compiled-mode @triton.jit reads its functions' source back."""
    where.write_text("\n\n".join((LIB / f"{n}.py").read_text() for n in names))
    spec = importlib.util.spec_from_file_location(f"candidate_{'_'.join(names)}", where)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load(names: tuple[str, ...], knobs: dict | None = None) -> types.ModuleType:
    """The pasted library files as one module, knobs overridden."""
    mod = paste(names, Path(tempfile.mkdtemp(prefix="fk-lib-")) / "kernel.py")
    for k, v in (knobs or {}).items():
        setattr(mod, k, v)
    return mod


def error(got: torch.Tensor, want: torch.Tensor, dtype: torch.dtype) -> float:
    """max |got - want| / (ulp * |want| + TOL * rms(want)); <= 1 passes (inf if shapes differ)."""
    if got.shape != want.shape or got.dtype != dtype:
        return float("inf")
    g = got.double()
    if not torch.isfinite(g).all():
        return float("inf")
    if want.numel() == 0:
        return 0.0
    rms = want.pow(2).mean().sqrt().item()
    bound = torch.finfo(dtype).eps * want.abs() + TOL[dtype] * max(rms, 1e-6)
    return ((g - want).abs() / bound).max().item()


class Gen:
    """Random test tensors on one device."""

    def __init__(self, device: str, seed: int = 0):
        self.device = device
        self.g = torch.Generator().manual_seed(seed)

    def __call__(self, *shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.randn(shape, generator=self.g).to(dtype=dtype, device=self.device)


def _d(*ts):
    return [None if t is None else t.double() for t in ts]


def gemm_cases(lib, r: Gen, dt):
    """(name, got, want, out): out is the out= tensor (the result must be it) or None."""
    a, b = r(37, 19, dtype=dt), r(19, 50, dtype=dt)
    yield "mm odd", lib.mm(a, b), aten.mm(*_d(a, b)), None
    a, b = r(33, 70, dtype=dt), r(45, 70, dtype=dt).t()
    yield "mm b.t()", lib.mm(a, b), aten.mm(*_d(a, b)), None
    a, b = r(64, 17, dtype=dt).t(), r(64, 40, dtype=dt)
    yield "mm a.t() even K", lib.mm(a, b), aten.mm(*_d(a, b)), None
    a, b = r(40, 90, dtype=dt)[::2, 1::3], r(60, 50, dtype=dt)[::2, ::2]
    yield "mm strided slices", lib.mm(a, b), aten.mm(*_d(a, b)), None
    a, b = r(130, 70, dtype=dt), r(70, 150, dtype=dt)
    yield "mm several tiles", lib.mm(a, b), aten.mm(*_d(a, b)), None
    a, b = r(70, 130, dtype=dt).t(), r(70, 150, dtype=dt)  # tf32 on a GPU: both copied K-major
    yield "mm a.t() several tiles", lib.mm(a, b), aten.mm(*_d(a, b)), None
    a, b = r(1, 100, dtype=dt), r(100, 30, dtype=dt)
    yield "mm M=1", lib.mm(a, b), aten.mm(*_d(a, b)), None
    a, b = r(30, 100, dtype=dt), r(100, 1, dtype=dt)
    yield "mm N=1 matvec", lib.mm(a, b), aten.mm(*_d(a, b)), None
    a, b = r(20, 1, dtype=dt), r(1, 25, dtype=dt)
    yield "mm K=1 outer", lib.mm(a, b), aten.mm(*_d(a, b)), None
    a, b = r(3, 0, dtype=dt), r(0, 4, dtype=dt)
    yield "mm K=0", lib.mm(a, b), aten.mm(*_d(a, b)), None
    a, b, out = r(37, 24, dtype=dt), r(24, 50, dtype=dt), r(50, 37, dtype=dt).t()
    yield "mm out= transposed", lib.mm(a, b, out=out), aten.mm(*_d(a, b)), out
    # few output tiles, a long K: split-K (slices summed by a second kernel), uneven last slice
    a, b = r(24, 4500, dtype=dt), r(4500, 40, dtype=dt)
    yield "mm split-K", lib.mm(a, b), aten.mm(*_d(a, b)), None
    a, b, bias, out = r(16, 4500, dtype=dt), r(16, 4500, dtype=dt).t(), r(16, dtype=dt), r(16, 32, dtype=dt)[:, ::2]
    got = lib.addmm(bias, a, b, alpha=0.5, beta=2, out=out)
    yield "addmm split-K bias out= strided", got, aten.addmm(*_d(bias, a, b), alpha=0.5, beta=2), out
    yield from addmm_cases(lib, r, dt)
    yield from bmm_cases(lib, r, dt)


def addmm_cases(lib, r: Gen, dt):
    a, b = r(21, 40, dtype=dt), r(40, 35, dtype=dt)
    for shape in ((35,), (1, 35), (21, 1), (21, 35), ()):
        bias = r(*shape, dtype=dt)
        got = lib.addmm(bias, a, b, alpha=0.5, beta=2)
        yield f"addmm bias{shape} a=.5 b=2", got, aten.addmm(*_d(bias, a, b), alpha=0.5, beta=2), None
    nan = torch.full((21, 35), float("nan"), dtype=dt, device=r.device)
    yield "addmm beta=0 nan bias", lib.addmm(nan, a, b, beta=0), aten.mm(*_d(a, b)), None
    bias, out = r(35, dtype=dt), r(70, 21, dtype=dt)[::2].t()
    got = lib.addmm(bias, a, b, out=out)
    yield "addmm out= strided", got, aten.addmm(*_d(bias, a, b)), out


def bmm_cases(lib, r: Gen, dt):
    a, b = r(3, 17, 40, dtype=dt), r(3, 40, 23, dtype=dt)
    yield "bmm", lib.bmm(a, b), aten.bmm(*_d(a, b)), None
    a, b = r(4, 40, 17, dtype=dt).transpose(1, 2), r(1, 40, 23, dtype=dt).expand(4, 40, 23)
    yield "bmm a^T, b batch-stride 0", lib.bmm(a, b), aten.bmm(*_d(a, b)), None
    a, b, out = r(2, 5, 1, dtype=dt), r(2, 1, 7, dtype=dt), r(2, 7, 5, dtype=dt).transpose(1, 2)
    yield "bmm K=1 out= transposed", lib.bmm(a, b, out=out), aten.bmm(*_d(a, b)), out
    a, b = r(3, 17, 40, dtype=dt), r(3, 40, 23, dtype=dt)
    for shape in ((17, 23), (3, 1, 23), (23,)):
        bias = r(*shape, dtype=dt)
        got = lib.baddbmm(bias, a, b, alpha=-1.5, beta=0.5)
        want = aten.baddbmm(*_d(bias.expand(3, 17, 23), a, b), alpha=-1.5, beta=0.5)
        yield f"baddbmm bias{shape} a=-1.5 b=.5", got, want, None
    nan = torch.full((3, 17, 23), float("nan"), dtype=dt, device=r.device)
    yield "baddbmm beta=0 nan bias", lib.baddbmm(nan, a, b, beta=0), aten.bmm(*_d(a, b)), None
    # tiny products: many items per program, K unrolled (per-item 2 x 3 by 3 x 3 transforms)
    a, b = r(1000, 2, 3, dtype=dt), r(1000, 3, 3, dtype=dt)
    yield "bmm tiny 1000 x 2x3 @ 3x3", lib.bmm(a, b), aten.bmm(*_d(a, b)), None
    a, b = r(300, 3, 5, dtype=dt).transpose(1, 2), r(1, 3, 7, dtype=dt).expand(300, 3, 7)
    bias = r(7, dtype=dt)
    got = lib.baddbmm(bias, a, b, alpha=0.5, beta=-2)
    want = aten.baddbmm(*_d(bias.expand(300, 5, 7), a, b), alpha=0.5, beta=-2)
    yield "baddbmm tiny a^T, b batch-stride 0, bias row", got, want, None
    a, b, out = r(8, 16, dtype=dt), r(16, 3, dtype=dt), r(3, 8, dtype=dt).t()
    yield "mm tiny K=16 out= transposed", lib.mm(a, b, out=out), aten.mm(*_d(a, b)), out


CONV_CASES = [  # name, x shape, weight shape, bias, stride, padding, dilation, transposed, output_padding, groups, layout
    ("1d g2 s2 p1 d2", (2, 4, 19), (32, 2, 3), True, [2], [1], [2], False, [0], 2, None),
    ("1d pointwise", (2, 8, 11), (5, 8, 1), False, [1], [0], [1], False, [0], 1, None),
    ("2d 1x1 NCHW tap-major", (2, 32, 5, 7), (24, 32, 1, 1), True, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, None),
    ("2d tap-major s(1,2) p(1,0)", (2, 32, 9, 8), (24, 32, 3, 3), True, [1, 2], [1, 0], [1, 1], False, [0, 0], 1, None),
    ("2d channels-last", (2, 32, 7, 6), (16, 32, 3, 3), False, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, "cl"),
    ("2d depthwise d2 p2", (2, 6, 9, 7), (6, 1, 3, 3), True, [1, 1], [2, 2], [2, 2], False, [0, 0], 6, None),
    ("2d depthwise x2 cl", (1, 4, 8, 8), (8, 1, 3, 3), False, [2, 2], [1, 1], [1, 1], False, [0, 0], 4, "cl"),
    ("2d cin3 5x5 s2", (2, 3, 13, 11), (8, 3, 5, 5), True, [2, 2], [2, 2], [1, 1], False, [0, 0], 1, None),
    ("2d tiles M,N>block", (2, 16, 13, 12), (80, 16, 1, 3), True, [1, 1], [0, 1], [1, 1], False, [0, 0], 1, None),
    ("2d strided input", (2, 40, 9, 16), (8, 20, 3, 3), False, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, "slice"),
    ("3d g2 mixed", (1, 4, 5, 6, 7), (32, 2, 2, 3, 2), True, [1, 2, 1], [0, 1, 1], [1, 1, 2], False, [0, 0, 0], 2, None),
    ("3d channels-last", (1, 16, 4, 5, 6), (8, 16, 3, 3, 3), False, [1, 1, 1], [1, 1, 1], [1, 1, 1], False, [0, 0, 0], 1, "cl"),
    ("1d transposed s3 op2", (2, 4, 7), (4, 5, 3), True, [3], [1], [1], True, [2], 1, None),
    ("2d transposed s2 op1 g2", (2, 4, 5, 6), (4, 16, 3, 3), True, [2, 2], [1, 0], [1, 1], True, [1, 0], 2, None),
    ("2d transposed tap-major", (2, 32, 5, 6), (32, 8, 3, 3), False, [2, 3], [1, 1], [1, 2], True, [1, 2], 2, None),
    ("2d transposed cl", (1, 16, 4, 4), (16, 8, 4, 4), True, [2, 2], [1, 1], [1, 1], True, [0, 0], 1, "cl"),
    ("3d transposed", (1, 2, 3, 4, 3), (2, 16, 2, 3, 2), True, [2, 1, 2], [0, 1, 1], [1, 1, 1], True, [1, 0, 0], 1, None),
    # strided transposed convolutions run one launch per output phase: a phase no tap reaches
    # (kernel 1 < stride 2: bias only), padding past the kernel, and KernelBench's k5 s2 p2
    ("1d transposed k1 s2", (2, 3, 5), (3, 16, 1), True, [2], [0], [1], True, [1], 1, None),
    ("2d transposed s2 p2 g3", (1, 6, 6, 5), (6, 16, 3, 3), False, [2, 2], [2, 2], [1, 1], True, [1, 0], 3, None),
    ("3d transposed k5 s2 p2", (2, 4, 3, 4, 3), (4, 5, 5, 5, 5), True, [2, 2, 2], [2, 2, 2], [1, 1, 1], True, [0, 1, 0], 1, None),
    ("2d int params", (1, 8, 6, 6), (4, 8, 3, 3), False, 2, 1, 1, False, 0, 1, None),
    ("2d channels-last weight", (2, 16, 6, 5), (8, 16, 3, 3), True, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, "wcl"),
    # thin groups (under 16 output channels per group, at most 16 in x out): the direct kernel
    ("1d thin g2 s2 p1 d2", (2, 4, 19), (6, 2, 3), True, [2], [1], [2], False, [0], 2, None),
    ("2d thin groups 2x3 cl", (2, 6, 7, 9), (9, 2, 3, 2), True, [2, 1], [1, 0], [1, 2], False, [0, 0], 3, "cl"),
    ("2d thin 3->4 no groups", (2, 3, 6, 5), (4, 3, 3, 3), False, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, None),
    ("2d depthwise strided input", (2, 20, 9, 8), (10, 1, 3, 3), True, [1, 1], [1, 1], [1, 1], False, [0, 0], 10, "slice"),
    ("3d depthwise d(1,2,1)", (1, 5, 4, 6, 5), (5, 1, 2, 3, 3), True, [1, 1, 2], [1, 2, 1], [1, 2, 1], False, [0, 0, 0], 5, None),
    ("3d depthwise cl", (1, 8, 3, 4, 5), (16, 1, 3, 3, 3), False, [1, 1, 1], [1, 1, 1], [1, 1, 1], False, [0, 0, 0], 8, "cl"),
    ("1d transposed thin k1 s2", (2, 3, 5), (3, 4, 1), True, [2], [0], [1], True, [1], 1, None),
    ("2d transposed depthwise s2 op1", (2, 4, 5, 6), (4, 1, 3, 3), True, [2, 2], [1, 0], [1, 1], True, [1, 0], 4, None),
    ("3d transposed thin g2", (1, 4, 3, 4, 3), (4, 3, 2, 3, 2), True, [2, 1, 2], [0, 1, 1], [1, 2, 1], True, [1, 0, 0], 2, None),
]


def conv_input(r: Gen, shape, layout, dt):
    if layout == "slice":  # every other channel of a wider tensor
        return r(shape[0], shape[1], *shape[2:], dtype=dt)[:, ::2]
    x = r(*shape, dtype=dt)
    if layout == "cl":
        return x.contiguous(memory_format=torch.channels_last if x.dim() == 4
                            else torch.channels_last_3d)
    return x


def conv_layout(x, w, shape) -> tuple[int, ...]:
    """Strides aten gives a convolution's output on the GPU (cuDNN): channels-last when the
    4-D/5-D input or weight is channels-last, else contiguous."""
    fmt = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
    cl = len(shape) in (4, 5) and any(
        not t.is_contiguous() and t.is_contiguous(memory_format=fmt) for t in (x, w))
    return torch.empty(shape).contiguous(memory_format=fmt if cl else torch.contiguous_format).stride()


def conv_cases(lib, r: Gen, dt):
    """(name, got, want, strides): strides are those aten gives on the GPU."""
    for name, xs, ws, has_bias, s, p, d, tr, op, g, layout in CONV_CASES:
        x, w = conv_input(r, xs, layout, dt), r(*ws, dtype=dt)
        if layout == "wcl":
            w = w.contiguous(memory_format=torch.channels_last)
        bias = r(ws[1] * g if tr else ws[0], dtype=dt) if has_bias else None
        got = lib.convolution(x, w, bias, s, p, d, tr, op, g)
        nd = len(xs) - 2
        args = [v if isinstance(v, list) else [v] * nd for v in (s, p, d, op)]
        want = aten.convolution(*_d(x, w, bias), *args[:3], tr, args[3], g)
        if x.is_cuda:  # and the layout cuDNN gives
            assert aten.convolution(x, w, bias, *args[:3], tr, args[3], g).stride() == \
                conv_layout(x, w, want.shape), name
        yield name, got, want, conv_layout(x, w, want.shape)
        if dt == torch.float32:  # again with an element-wise epilogue fused in place
            other = torch.empty_strided(want.shape, conv_layout(x, w, want.shape), device=r.device)
            other.copy_(r(*want.shape))
            got = lib.convolution(x, w, bias, s, p, d, tr, op, g, epilogue=(epilogue_check, (0.5, other)))
            yield f"{name} +epilogue", got, torch.relu(want) * 0.5 + other.double(), \
                conv_layout(x, w, want.shape)


@triton.jit
def epilogue_check(xindex, xmask, args):
    """relu(y) * args[1] + args[2], in place on y = args[0], at memory offsets xindex."""
    v = tl.load(args[0] + xindex, mask=xmask)
    o = tl.load(args[2] + xindex, mask=xmask)
    tl.store(args[0] + xindex, tl.maximum(v, 0.0) * args[1] + o, mask=xmask)


SORT_CASES = [  # name, shape, dim, op, k, descending/largest
    ("sort rows", (5, 37), -1, "sort", None, False),
    ("sort rows descending", (3, 64), 1, "sort", None, True),
    ("sort dim 0", (19, 4), 0, "sort", None, False),
    ("sort 3-d middle dim", (2, 9, 3), 1, "sort", None, True),
    ("topk largest", (6, 100), -1, "topk", 7, True),
    ("topk smallest dim 0", (33, 5), 0, "topk", 4, False),
    ("topk k = n", (4, 16), -1, "topk", 16, True),
    ("topk one long row", (1, 700), -1, "topk", 10, True),
    ("topk many short rows", (300, 6), -1, "topk", 3, True),
]


def sort_input(r: Gen, shape, dt, ties: bool) -> torch.Tensor:
    """Distinct values (a permutation, so indices are unique), or many ties; negative and
    positive zeros and large magnitudes included for floats."""
    n = math.prod(shape)
    if ties:
        return torch.randint(-3, 4, (n,), generator=r.g).to(dt).reshape(shape).to(r.device)
    x = (torch.randperm(n, generator=r.g) - n // 2).double()
    if dt.is_floating_point:
        x = x * 0.75
    return x.to(dt).reshape(shape).to(r.device)


def sort_ok(x, dim, got, want) -> bool:
    """Values bit-equal to torch's; indices that point at those values, each once per row
    (the order among equal values is not part of topk's contract: torch's own differs)."""
    (v, i), (wv, wi) = (t.cpu() for t in got), (t.cpu() for t in want)
    if v.shape != wv.shape or v.dtype != wv.dtype or i.dtype != wi.dtype or not torch.equal(v, wv):
        return False
    ordered, n = i.sort(dim=dim).values, i.shape[dim]
    distinct = bool((ordered.narrow(dim, 1, n - 1) != ordered.narrow(dim, 0, n - 1)).all())
    return distinct and torch.equal(x.cpu().gather(dim, i), v)


def sort_rows(device: str, knobs: dict) -> list[dict]:
    """sort/topk against torch's stable sort, by :func:`sort_ok`."""
    lib, rows = load(("sort",), knobs), []
    for dt in (torch.float32, torch.bfloat16, torch.int8):
        for name, shape, dim, op, k, flag in SORT_CASES:
            for ties in (False, True):
                x = sort_input(Gen(device), shape, dt, ties)
                if op == "sort":
                    got = lib.sort(x, dim, flag)
                    want = torch.sort(x, dim=dim, descending=flag, stable=True)
                else:
                    got = lib.topk(x, k, dim, flag)
                    full = torch.sort(x, dim=dim, descending=flag, stable=True)
                    want = tuple(t.narrow(dim, 0, k) for t in full)
                ok = sort_ok(x, dim, got, want)
                rows.append({"family": "sort", "case": name + (" ties" if ties else ""),
                             "dtype": str(dt).split(".")[1], "err": 0.0 if ok else float("inf"),
                             "ok": ok, "is_out": True, "layout_ok": all(g.is_contiguous() for g in got)})
    return rows


SCATTER_CASES = [  # name, source shape, dim, target size along dim
    ("rows into buckets", (6, 50), 1, 9),
    ("1-d", (300,), 0, 7),
    ("3-d middle dim", (3, 40, 5), 1, 11),
    ("dim 0", (20, 4), 0, 6),
    ("last dim negative", (2, 3, 17), -1, 4),
]


def scatter_cases(lib, r: Gen, dt):
    """scatter_reduce amax/amin/mean, with and without the input's own value, against the
    aten op on float64 copies (a target no index reaches keeps the input's value)."""
    for name, shape, dim, size in SCATTER_CASES:
        target = list(shape)
        target[dim] = size
        x, src = r(*target, dtype=dt), r(*shape, dtype=dt)
        index = torch.randint(0, size, shape, generator=r.g).to(r.device)
        for reduce in ("amax", "amin", "mean"):
            for include_self in (True, False):
                got = lib.scatter_reduce(x, dim, index, src, reduce, include_self)
                want = torch.scatter_reduce(x.double(), dim, index, src.double(), reduce,
                                            include_self=include_self)
                yield f"{name} {reduce}{'' if include_self else ' without self'}", got, want, None


RNN_CASES = [  # kind, layers, bidirectional, batch_first, biases, (steps, batch, input, hidden)
    ("gru", 1, False, True, True, (6, 3, 5, 7)),
    ("gru", 2, True, False, False, (4, 17, 9, 20)),
    ("lstm", 2, False, True, True, (5, 2, 3, 33)),
    ("lstm", 1, True, False, True, (3, 5, 8, 6)),
    ("rnn_tanh", 2, True, True, True, (4, 3, 6, 5)),
    ("rnn_relu", 1, False, False, True, (5, 4, 4, 9)),
]


def rnn_cases(lib, r: Gen, dt):
    """Recurrent layers over a sequence, output and final states, against the aten op on
    float64 copies (gate order and formulas, both directions, stacked layers, no biases); the
    library's outputs are contiguous (aten's batch-first output is a transposed view). Not
    bf16 under the interpreter, whose float32 -> bfloat16 stores truncate: each step's state
    is stored and read back, so the bias grows with the steps (several times the error of
    ATen's own bf16 layers on the CPU in these cases)."""
    if dt == torch.bfloat16 and r.device == "cpu":
        return
    for kind, layers, bidir, batch_first, biases, (steps, batch, feat, hidden) in RNN_CASES:
        dirs, gates = 2 if bidir else 1, {"gru": 3, "lstm": 4}.get(kind, 1)
        x = r(batch, steps, feat, dtype=dt) if batch_first else r(steps, batch, feat, dtype=dt)
        params = []
        for layer in range(layers):
            for _ in range(dirs):
                params += [r(gates * hidden, feat if layer == 0 else dirs * hidden, dtype=dt) * 0.3,
                           r(gates * hidden, hidden, dtype=dt) * 0.3]
                params += [r(gates * hidden, dtype=dt), r(gates * hidden, dtype=dt)] if biases else []
        h = r(layers * dirs, batch, hidden, dtype=dt)
        hx = [h, r(layers * dirs, batch, hidden, dtype=dt)] if kind == "lstm" else h
        flags = (biases, layers, 0.0, False, bidir, batch_first)
        got = getattr(lib, kind)(x, hx, params, *flags)
        want = getattr(aten, kind).input(x.double(), [t.double() for t in hx] if kind == "lstm" else h.double(),
                                         [p.double() for p in params], *flags)
        name = f"{kind} {layers}x{'bi' if bidir else 'uni'}{' batch_first' if batch_first else ''}" \
            f"{'' if biases else ' no bias'}"
        for i, label in enumerate(("output", "h_n", "c_n")[:len(want)]):
            yield f"{name} {label}", got[i], want[i], want[i].contiguous().stride()


def run(device: str, only: str | None, knobs: dict,
        dtypes: tuple[torch.dtype, ...] = DTYPES) -> list[dict]:
    rows = sort_rows(device, knobs) if only in (None, "sort") else []
    for family, cases, files in (("gemm", gemm_cases, ("gemm",)), ("conv", conv_cases, ("conv",)),
                                 ("scatter", scatter_cases, ("scatter",)), ("rnn", rnn_cases, ("gemm", "rnn"))):
        if only and family != only:
            continue
        lib = load(files, knobs)
        for dt in dtypes:
            for name, got, want, extra in cases(lib, Gen(device), dt):
                if device != "cpu":
                    torch.cuda.synchronize()
                err = error(got.cpu(), want.cpu(), dt)
                out = extra if isinstance(extra, torch.Tensor) else None
                layout = extra if isinstance(extra, tuple) else want.stride()
                rows.append({"family": family, "case": name, "dtype": str(dt).split(".")[1],
                             "err": err, "ok": err <= 1.0, "is_out": out is None or got is out,
                             "layout_ok": out is not None or got.stride() == layout})
    return rows


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--only", choices=("gemm", "conv", "sort", "scatter", "rnn"))
    ap.add_argument("--knobs", default="{}")
    ap.add_argument("--dtypes", default="float32,float16,bfloat16")
    args = ap.parse_args(argv)
    dtypes = tuple(getattr(torch, d) for d in args.dtypes.split(","))
    for row in run(args.device, args.only, json.loads(args.knobs), dtypes):
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
