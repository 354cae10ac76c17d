"""Compile the library kernels (src/forgekernel/generate/library) for sm_90, no GPU needed.

Run as a script in a fresh process (it switches Triton between interpreter and compiled
mode): ``python tests/library_static.py [--knobs JSON]``. Each library function is called on
``meta`` tensors at representative H200-sized shapes with Triton's launch entry replaced, so
the launch (arguments, constexprs, warps, stages) is recorded and not run; each recorded
launch is then compiled ahead of time for sm_90 (forgekernel.profile.triton_compile) and its
cubin read for registers, shared memory and spills (forgekernel.profile.static). Prints one
JSON line per launch.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
from pathlib import Path

import torch
import triton
import triton.language as tl

from forgekernel.profile import triton_compile as tc
from forgekernel.profile.static import _from_compiled
from forgekernel.task import load_module

LIB = Path(__file__).resolve().parents[1] / "src" / "forgekernel" / "generate" / "library"
INT_DIVISION = re.compile(r"\b(?:div|rem)\.[su](?:32|64)\b")
"""Integer division and remainder in the PTX (each dozens of instructions: by a size known
only at run time; by a constexpr they become multiplies and shifts)."""


def meta(*shape: int, dtype=torch.bfloat16, layout: str = "") -> torch.Tensor:
    t = torch.empty(shape, dtype=dtype, device="meta")
    if layout == "cl":
        return t.contiguous(memory_format=torch.channels_last if t.dim() == 4
                            else torch.channels_last_3d)
    return t.t() if layout == "t" else t


BF, H, F = torch.bfloat16, torch.float16, torch.float32


@triton.jit
def _epilogue(xindex, xmask, args):
    """A fused tail as the generated code writes one (KernelBench L2 31's min, bias, scale):
    the channel of each element decoded from its offset by the sizes in ``args``."""
    y, bias, plane, channels = args[0], args[1], args[2], args[3]
    v = tl.minimum(tl.load(y + xindex, xmask), 0.5) + tl.load(bias + (xindex // plane) % channels, xmask)
    tl.store(y + xindex, v * 2.0, xmask)


def _fused(c, const):
    """L2 31's convolution (fp32, 64 -> 128 channels, 3x3, 128x128 NCHW) with its tail fused,
    the epilogue's sizes passed as constexprs (as the generated code does) or as plain ints,
    or (``const`` None) without the tail."""
    x, w, b = meta(128, 64, 128, 128, dtype=F), meta(128, 64, 3, 3, dtype=F), meta(128, dtype=F)
    sizes = (126 * 126, 128)
    epilogue = None if const is None else (_epilogue, (b, *(tl.constexpr(v) if const else v for v in sizes)))
    return c.convolution(x, w, b, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, epilogue=epilogue)
CALLS = {  # file -> [(name, call on the loaded module)]
    "gemm": [
        ("mm bf16 4096^3", lambda g: g.mm(meta(4096, 4096), meta(4096, 4096))),
        ("mm fp32 (tf32) 4096^3 b.t()", lambda g: g.mm(meta(4096, 4096, dtype=F),
                                                       meta(4096, 4096, dtype=F, layout="t"))),
        ("addmm fp16 K=1000 +bias", lambda g: g.addmm(meta(4096, dtype=H), meta(4096, 1000, dtype=H),
                                                      meta(1000, 4096, dtype=H))),
        ("bmm bf16 32x1024x128x1024", lambda g: g.bmm(meta(32, 1024, 128), meta(32, 128, 1024))),
        ("mm bf16 M=1 matvec", lambda g: g.mm(meta(1, 4096), meta(4096, 4096))),
        ("mm fp32 (tf32) split-K 256x256 K=524288", lambda g: g.mm(meta(256, 524288, dtype=F),
                                                                   meta(524288, 256, dtype=F))),
        ("bmm fp32 tiny 1M x 2x3 @ 3x3", lambda g: g.bmm(meta(1 << 20, 2, 3, dtype=F), meta(1 << 20, 3, 3, dtype=F))),
    ],
    "conv": [
        ("3x3 NCHW (copied NHWC) bf16 c128", lambda c: c.convolution(
            meta(32, 128, 28, 28), meta(128, 128, 3, 3), meta(128), [1, 1], [1, 1], [1, 1],
            False, [0, 0], 1)),
        ("3x3 NHWC bf16 c128", lambda c: c.convolution(
            meta(32, 128, 28, 28, layout="cl"), meta(128, 128, 3, 3), None, [1, 1], [1, 1],
            [1, 1], False, [0, 0], 1)),
        ("1x1 NCHW bf16 c256", lambda c: c.convolution(
            meta(32, 256, 56, 56), meta(64, 256, 1, 1), None, [1, 1], [0, 0], [1, 1], False,
            [0, 0], 1)),
        ("7x7 s2 c3 NHWC fp16", lambda c: c.convolution(
            meta(32, 3, 224, 224, dtype=H, layout="cl"), meta(64, 3, 7, 7, dtype=H), None,
            [2, 2], [3, 3], [1, 1], False, [0, 0], 1)),
        ("depthwise 3x3 NCHW fp16", lambda c: c.convolution(
            meta(32, 256, 28, 28, dtype=H), meta(256, 1, 3, 3, dtype=H), None, [1, 1], [1, 1],
            [1, 1], False, [0, 0], 256)),
        ("depthwise x2 5x5 s2 NHWC fp32", lambda c: c.convolution(
            meta(32, 96, 56, 56, dtype=F, layout="cl"), meta(192, 1, 5, 5, dtype=F), meta(192, dtype=F),
            [2, 2], [2, 2], [1, 1], False, [0, 0], 96)),
        ("3x3 c8->64 NCHW fp32 (flat walk, NCHW output)", lambda c: c.convolution(
            meta(128, 8, 256, 256, dtype=F), meta(64, 8, 3, 3, dtype=F), meta(64, dtype=F),
            [1, 1], [0, 0], [1, 1], False, [0, 0], 1)),
        ("transposed k4 s2 NCHW bf16", lambda c: c.convolution(
            meta(16, 128, 32, 32), meta(128, 64, 4, 4), meta(64), [2, 2], [1, 1], [1, 1], True,
            [0, 0], 1)),
        ("3d 3x3x3 NDHWC fp32", lambda c: c.convolution(
            meta(4, 64, 16, 28, 28, dtype=F, layout="cl"), meta(64, 64, 3, 3, 3, dtype=F), None,
            [1, 1, 1], [1, 1, 1], [1, 1, 1], False, [0, 0, 0], 1)),
        ("3x3 c64->128 NCHW fp32, no tail", lambda c: _fused(c, None)),
        ("3x3 c64->128 NCHW fp32 + fused tail, sizes constexpr", lambda c: _fused(c, True)),
        ("3x3 c64->128 NCHW fp32 + fused tail, sizes plain", lambda c: _fused(c, False)),
    ],
    "rnn": [  # one time step each (every step's launch is the same)
        ("gru fp32 batch 10 hidden 256 (KernelBench L3 39)", lambda r: r.gru(
            meta(1, 10, 128, dtype=F), meta(1, 10, 256, dtype=F),
            [meta(768, 128, dtype=F), meta(768, 256, dtype=F), meta(768, dtype=F), meta(768, dtype=F)],
            True, 1, 0.0, False, False, False)),
        ("lstm fp32 batch 10 hidden 256 (KernelBench L3 35)", lambda r: r.lstm(
            meta(1, 10, 128, dtype=F), [meta(1, 10, 256, dtype=F), meta(1, 10, 256, dtype=F)],
            [meta(1024, 128, dtype=F), meta(1024, 256, dtype=F), meta(1024, dtype=F), meta(1024, dtype=F)],
            True, 1, 0.0, False, False, False)),
        ("lstm fp32 batch 10 hidden 64 (one program: the whole sequence)", lambda r: r.lstm(
            meta(4, 10, 32, dtype=F), [meta(1, 10, 64, dtype=F), meta(1, 10, 64, dtype=F)],
            [meta(256, 32, dtype=F), meta(256, 64, dtype=F), meta(256, dtype=F), meta(256, dtype=F)],
            True, 1, 0.0, False, False, True)),
        ("lstm bf16 batch 64 hidden 512", lambda r: r.lstm(
            meta(1, 64, 512), [meta(1, 64, 512), meta(1, 64, 512)],
            [meta(2048, 512), meta(2048, 512), meta(2048), meta(2048)], True, 1, 0.0, False, False, False)),
    ],
    "sort": [
        ("topk fp32 8192x2048 k=8", lambda s: s.topk(meta(8192, 2048, dtype=F), 8)),
        ("sort bf16 rows of 8192", lambda s: s.sort(meta(64, 8192))),
        ("sort fp16 short rows 65536x32 descending", lambda s: s.sort(meta(65536, 32, dtype=H), -1, True)),
    ],
    "scatter": [
        ("scatter amax bf16 8192x4096 into 64 buckets", lambda s: s.scatter_reduce(
            meta(8192, 64), 1, meta(8192, 4096, dtype=torch.int64), meta(8192, 4096), "amax", True)),
        ("scatter mean fp32 rows into 50000 nodes", lambda s: s.scatter_reduce(
            meta(50000, 128, dtype=F), 0, meta(400000, 128, dtype=torch.int64),
            meta(400000, 128, dtype=F), "mean", False)),
    ],
}


def _no_launch_mm(a, b):
    """rnn.py's input projection (gemm.py's, compiled in its own cases), shapes only."""
    return torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)


def capture(name: str, call, knobs: dict) -> list[tc.LaunchSpec]:
    path = LIB / f"{name}.py"
    seen: list = []
    with tc._interpret(True):
        mod = load_module(path, name=f"_fk_lib_capture_{name}")
        if name == "rnn":
            mod.mm, mod.addmm = _no_launch_mm, lambda bias, a, b: _no_launch_mm(a, b)
        for k, v in knobs.items():
            setattr(mod, k, v)
        with tc._capture_only(seen):
            call(mod)
    return [tc.LaunchSpec(n, str(path), args, kwargs, "") for n, args, kwargs in seen]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--knobs", default="{}")
    ap.add_argument("--only", action="append", choices=sorted(CALLS),
                    help="compile only this library file's launches (repeatable)")
    args = ap.parse_args(argv)
    knobs = json.loads(args.knobs)
    for file, calls in CALLS.items():
        if args.only and file not in args.only:
            continue
        for label, call in calls:
            for spec in capture(file, call, knobs):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    compiled = tc.compile_spec(spec, 90)
                    k = _from_compiled(spec, compiled, 90)
                config = {key: v for key, v in spec.kwargs.items()
                          if not hasattr(v, "dtype") and key not in ("EPI", "epi_args")}
                print(json.dumps({"file": file, "case": label, "kernel": k.name, "regs": k.regs,
                                  "smem_bytes": k.smem_bytes, "spill_stores": k.spill_stores,
                                  "spill_loads": k.spill_loads, "uses_wgmma": k.uses_wgmma,
                                  "int_divisions": len(INT_DIVISION.findall(compiled.asm["ptx"])),
                                  "config": config}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
