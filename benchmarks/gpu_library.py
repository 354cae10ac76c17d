"""The generator's library kernels (gemm.py, conv.py, rnn.py) against cuBLAS/cuDNN on one GPU.

    python3 benchmarks/gpu_library.py --out DIR [--quick]

For each workload it checks the library function against torch's own result (same dtype,
error relative to the output's RMS) and times it with ``triton.testing.do_bench`` (median
of repeated calls, L2 flushed between them; host launch overhead included where it exceeds
the GPU work) and with the profiler (device_ms: the GPU time of the call's kernels) at the
default knobs and at a few other knob points; torch's own op is timed the same way. For NCHW convolutions it also times the
library on a channels-last copy made inside the timed call, and for every convolution an
element-wise pass over the output run after it or fused into it (``epilogue=``). Writes DIR/library_gpu.json as
it goes and prints one line per row.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import types
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

from forgekernel.generate.classify import thin_group

LIB = Path(__file__).resolve().parents[1] / "src" / "forgekernel" / "generate" / "library"
GEMM_KNOBS = [  # BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, NUM_WARPS, NUM_STAGES
    None, (128, 128, 64, 8, 8, 3), (128, 256, 64, 8, 8, 3), (128, 128, 64, 8, 4, 4),
    (64, 128, 64, 8, 4, 4), (128, 128, 32, 8, 4, 4)]
CONV_KNOBS = [  # BLOCK_M, BLOCK_N, BLOCK_K, NUM_WARPS, NUM_STAGES
    None, (128, 128, 32, 8, 3), (64, 64, 32, 4, 3), (128, 64, 64, 4, 3), (128, 128, 64, 8, 3),
    (64, 128, 32, 4, 3)]
DIRECT_KNOBS = [  # CONV_DIRECT_BLOCK, CONV_DIRECT_WARPS: thin groups (depthwise) run the direct kernel
    None, (256, 2), (512, 4), (2048, 4), (2048, 8), (4096, 8)]
GEMMS = [  # name, op, shapes (a, b[, bias]), dtype
    ("mm 4096^3", "mm", ((4096, 4096), (4096, 4096)), torch.bfloat16),
    ("mm 4096^3", "mm", ((4096, 4096), (4096, 4096)), torch.float16),
    ("mm 4096^3 tf32", "mm", ((4096, 4096), (4096, 4096)), torch.float32),
    ("mm 8192^3", "mm", ((8192, 8192), (8192, 8192)), torch.bfloat16),
    ("mm M=16 decode", "mm", ((16, 4096), (4096, 4096)), torch.bfloat16),
    ("addmm 4096x4096x1000+bias", "addmm", ((4096, 1000), (1000, 4096), (4096,)), torch.bfloat16),
    ("bmm 32x1024x1024x128", "bmm", ((32, 1024, 128), (32, 128, 1024)), torch.float16),
]
CONVS = [  # name, x shape, weight shape, stride, padding, transposed, groups
    ("3x3 c128 28x28", (32, 128, 28, 28), (128, 128, 3, 3), 1, 1, False, 1),
    ("1x1 c256->64 56x56", (32, 256, 56, 56), (64, 256, 1, 1), 1, 0, False, 1),
    ("7x7 s2 c3 224x224", (32, 3, 224, 224), (64, 3, 7, 7), 2, 3, False, 1),
    ("dw3x3 c256 28x28", (32, 256, 28, 28), (256, 1, 3, 3), 1, 1, False, 256),
    ("3x3 c8->64 256x256 (KB L2 87)", (32, 8, 256, 256), (64, 8, 3, 3), 1, 0, False, 1),
    ("3x3 c64->128 128x128 (KB L2 31)", (32, 64, 128, 128), (128, 64, 3, 3), 1, 0, False, 1),
    ("dw3x3 c64 512x512 (KB L1 86)", (16, 64, 512, 512), (64, 1, 3, 3), 1, 1, False, 64),
    ("dw5x5 s2 c96 x2 56x56", (32, 96, 56, 56), (192, 1, 5, 5), 2, 2, False, 96),
    ("convT k4 s2 c128->64 32x32", (16, 128, 32, 32), (128, 64, 4, 4), 2, 1, True, 1),
    ("3d 3x3x3 c64 16x28x28", (4, 64, 16, 28, 28), (64, 64, 3, 3, 3), 1, 1, False, 1),
]


@triton.jit
def _keep(xindex, xmask, args):
    """An element-wise pass in place that leaves the values as they are (a stand-in epilogue
    with an epilogue's memory traffic: one load, one store per element)."""
    v = tl.load(args[0] + xindex, mask=xmask)
    tl.store(args[0] + xindex, tl.where(v == v, v, 0.0), mask=xmask)


@triton.jit
def _keep_pass(y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    _keep(i, i < n, (y_ptr,))


def _then_pass(y: torch.Tensor) -> torch.Tensor:
    _keep_pass[(triton.cdiv(y.numel(), 1024),)](y, y.numel(), BLOCK=1024)
    return y


def load(name: str, knobs: dict) -> types.ModuleType:
    mod = types.ModuleType(f"lib_{name}")
    for part in (("gemm", "rnn") if name == "rnn" else (name,)):  # rnn.py calls gemm.py's addmm
        path = LIB / f"{part}.py"
        exec(compile(path.read_text(), str(path), "exec"), mod.__dict__)  # a real file: jit reads it
    for k, v in knobs.items():
        setattr(mod, k, v)
    return mod


def rel_err(got: torch.Tensor, want: torch.Tensor) -> float:
    w = want.double()
    return ((got.double() - w).abs().max() / w.pow(2).mean().sqrt().clamp_min(1e-12)).item()


def bench(fn) -> float:
    return do_bench(fn, warmup=10, rep=50, return_mode="median")


def device_ms(fn, calls: int = 10) -> float:
    """GPU time of one call: all its kernels (copies included), from the profiler. do_bench's
    time also holds the host's launch overhead when that is longer than the GPU work."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    return sum(e.device_time for e in prof.events()
               if e.device_type.name == "CUDA") / calls / 1e3


def gemm_rows(quick: bool):
    for name, op, shapes, dt in GEMMS:
        ts = [torch.randn(s, device="cuda", dtype=dt) for s in shapes]
        args = ts if op != "addmm" else [ts[2], ts[0], ts[1]]
        ref = getattr(torch, op)(*args)
        flops = 2 * ref.numel() * shapes[0][-1]
        ref_fn = lambda args=args, op=op: getattr(torch, op)(*args)  # noqa: E731
        t_ref, d_ref = bench(ref_fn), device_ms(ref_fn)
        yield {"kind": "gemm", "name": name, "dtype": str(dt), "impl": "torch", "ms": t_ref,
               "device_ms": d_ref, "tflops": flops / t_ref / 1e9}
        for kn in GEMM_KNOBS[:2] if quick else GEMM_KNOBS:
            knobs = {} if kn is None else dict(zip(
                ("GEMM_BLOCK_M", "GEMM_BLOCK_N", "GEMM_BLOCK_K", "GEMM_GROUP_M",
                 "GEMM_NUM_WARPS", "GEMM_NUM_STAGES"), kn, strict=True))
            fn = getattr(load("gemm", knobs), op)
            row = {"kind": "gemm", "name": name, "dtype": str(dt), "impl": "library",
                   "knobs": kn or "default"}
            try:
                err = rel_err(fn(*args), ref)
            except Exception as exc:  # a knob point this GPU cannot run (shared memory)
                yield {**row, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
                continue
            call = lambda fn=fn, args=args: fn(*args)  # noqa: E731
            t, d = bench(call), device_ms(call)
            yield {**row, "ms": t, "device_ms": d, "tflops": flops / t / 1e9, "err": err,
                   "vs_torch": t_ref / t, "device_vs_torch": d_ref / d}


def conv_rows(quick: bool):
    for name, xs, ws, s, p, tr, g in CONVS:
        nd = len(xs) - 2
        for dt in (torch.bfloat16, torch.float32):  # fp32 at the default knobs only
            for layout in ("nchw", "cl"):
                yield from conv_layout_rows(name, xs, ws, [s] * nd, [p] * nd, tr, g, dt, layout,
                                            quick or dt == torch.float32)


def conv_layout_rows(name, xs, ws, s, p, tr, g, dt, layout, quick):
    nd = len(xs) - 2
    x = torch.randn(xs, device="cuda", dtype=dt)
    fmt = torch.channels_last if nd == 2 else torch.channels_last_3d
    if layout == "cl":
        if nd == 1:
            return
        x = x.contiguous(memory_format=fmt)
    w = torch.randn(ws, device="cuda", dtype=dt) / (ws[1] * ws[2] ** nd) ** 0.5
    args = (None, s, p, [1] * nd, tr, [0] * nd, g)
    ref = torch.ops.aten.convolution(x, w, *args)
    macs = ref.numel() * (ws[0] if tr else ws[1]) * ws[2] ** nd
    if tr:
        macs = x.numel() * ws[1] * ws[2] ** nd
    base = {"kind": "conv", "name": name, "dtype": str(dt), "layout": layout}
    t_ref = bench(lambda: torch.ops.aten.convolution(x, w, *args))
    d_ref = device_ms(lambda: torch.ops.aten.convolution(x, w, *args))
    yield {**base, "impl": "torch", "ms": t_ref, "device_ms": d_ref,
           "tflops": 2 * macs / t_ref / 1e9}
    thin = thin_group(ws[0] // g if tr else ws[1], ws[1] if tr else ws[0] // g)
    names = ("CONV_DIRECT_BLOCK", "CONV_DIRECT_WARPS") if thin else (
        "CONV_BLOCK_M", "CONV_BLOCK_N", "CONV_BLOCK_K", "CONV_NUM_WARPS", "CONV_NUM_STAGES")
    points = DIRECT_KNOBS if thin else CONV_KNOBS
    for kn in points[:1] if quick else points:
        knobs = {} if kn is None else dict(zip(names, kn, strict=True))
        lib = load("conv", knobs)
        variants = [("library", lambda lib=lib: lib.convolution(x, w, *args))]
        if layout == "nchw" and nd > 1 and kn is None:
            variants.append(("library on cl copy", lambda lib=lib: lib.convolution(
                x.contiguous(memory_format=fmt), w, *args)))
        if kn is None:  # an element-wise tail: a second pass over the output, or fused
            variants += [("library, then a pass", lambda lib=lib: _then_pass(lib.convolution(x, w, *args))),
                         ("library, pass fused", lambda lib=lib: lib.convolution(x, w, *args, epilogue=(_keep, ())))]
        for impl, fn in variants:
            try:
                err = rel_err(fn(), ref)
            except Exception as exc:  # a knob point this GPU cannot run (shared memory)
                yield {**base, "impl": impl, "knobs": kn or "default",
                       "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
                continue
            t, d = bench(fn), device_ms(fn)
            yield {**base, "impl": impl, "knobs": kn or "default", "ms": t, "device_ms": d,
                   "tflops": 2 * macs / t / 1e9, "err": err, "vs_torch": t_ref / t,
                   "device_vs_torch": d_ref / d}


RNNS = [  # name, module, batch, steps, input, hidden, layers, bidirectional, dtype
    ("KernelBench L3 35 LSTM", torch.nn.LSTM, 10, 512, 128, 256, 6, False, torch.float32),
    ("KernelBench L3 39 GRU", torch.nn.GRU, 10, 512, 128, 256, 6, False, torch.float32),
    ("KernelBench L3 41 GRU bidirectional", torch.nn.GRU, 10, 512, 128, 256, 6, True, torch.float32),
    ("LSTM batch 64 bf16", torch.nn.LSTM, 64, 128, 512, 512, 2, False, torch.bfloat16),
]
RNN_KNOBS = [None, {"RNN_BLOCK_H": 32}, {"RNN_BLOCK_H": 128}, {"RNN_BLOCK_K": 32}, {"RNN_NUM_WARPS": 8}]


def rnn_rows(quick: bool):
    """rnn.py (one launch per time step) against cuDNN's recurrent layers, whole sequences."""
    for name, cls, batch, steps, feat, hidden, layers, bidir, dt in RNNS:
        module = cls(feat, hidden, layers, batch_first=True, bidirectional=bidir).to("cuda", dt)
        x = torch.randn(batch, steps, feat, device="cuda", dtype=dt)
        h = torch.randn(layers * (2 if bidir else 1), batch, hidden, device="cuda", dtype=dt)
        hx = (h, torch.randn_like(h)) if cls is torch.nn.LSTM else h
        params = [p.detach() for p in module._flat_weights]
        flags = (True, layers, 0.0, False, bidir, True)
        kind = "lstm" if cls is torch.nn.LSTM else "gru"
        with torch.no_grad():
            ref = module(x, hx)[0]
            ref_fn = lambda module=module, x=x, hx=hx: module(x, hx)  # noqa: E731
            t_ref, d_ref = bench(ref_fn), device_ms(ref_fn)
            yield {"kind": "rnn", "name": name, "dtype": str(dt), "impl": "torch", "ms": t_ref, "device_ms": d_ref}
            for kn in RNN_KNOBS[:2] if quick else RNN_KNOBS:
                fn = getattr(load("rnn", kn or {}), kind)
                call = lambda fn=fn, x=x, hx=hx, params=params, flags=flags: fn(x, hx, params, *flags)  # noqa: E731
                err = rel_err(call()[0], ref)
                t, d = bench(call), device_ms(call)
                yield {"kind": "rnn", "name": name, "dtype": str(dt), "impl": "library", "knobs": kn or "default",
                       "ms": t, "device_ms": d, "err": err, "vs_torch": t_ref / t, "device_vs_torch": d_ref / d}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=("gemm", "conv", "rnn"))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    doc = {"date": datetime.date.today().isoformat(), "device": torch.cuda.get_device_name(),
           "torch": torch.__version__, "triton": triton.__version__,
           "commit": os.environ.get("COMMIT", ""), "rows": []}  # COMMIT=<sha of the tree sent>
    torch.backends.cuda.matmul.allow_tf32 = True  # torch's fp32 reference runs on tf32 too
    torch.backends.cudnn.allow_tf32 = True
    gens = {"gemm": gemm_rows, "conv": conv_rows, "rnn": rnn_rows}
    for kind, gen in gens.items():
        if args.only and kind != args.only:
            continue
        for row in gen(args.quick):
            doc["rows"].append(row)
            print(json.dumps(row), flush=True)
            (out / "library_gpu.json").write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
