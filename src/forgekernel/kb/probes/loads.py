"""Load paths of a streaming Triton kernel: access width, and tensor descriptors (TMA).

``load_width``: y = 2x over 1 GiB of bf16, once with contiguous offsets (Triton emits
16-byte vector loads) and once through a run-time stride it cannot specialise (so each
thread loads 2-byte scalars). The PTX of both is read back to confirm the widths.
``tma_loads``: y = 2x over [BM, BN] tiles, loading through pointers or through a tensor
descriptor (host-built ``TensorDescriptor`` or in-kernel ``tl.make_tensor_descriptor``);
a descriptor path that this Triton cannot build is recorded as unsupported, not crashed on.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import triton
import triton.language as tl

from forgekernel.kb.probes import ProbeContext, ProbeResult
from forgekernel.kb.probes.timing import Flusher, tbs, timed_median

STREAM_BYTES = 1 << 30
BLOCK = 4096
TILE_M, TILE_N = 16384, 8192
BM, BN = 64, 128


@triton.jit
def _scale_vec(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m).to(tl.float32)
    tl.store(Y + offs, (x * 2.0).to(Y.dtype.element_ty), mask=m)


@triton.jit(do_not_specialize=["stride"])
def _scale_strided(X, Y, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs * stride, mask=m).to(tl.float32)
    tl.store(Y + offs * stride, (x * 2.0).to(Y.dtype.element_ty), mask=m)


_LD = re.compile(r"\bld\.global((?:\.[\w:]+)+)")


def load_widths(ptx: str) -> dict[str, int]:
    """Count global loads in PTX by bytes per thread per instruction: {'16': 2, '2': 0, ...}."""
    counts: Counter[str] = Counter()
    for mods in _LD.findall(ptx):
        parts = mods.strip(".").split(".")
        vec = next((int(p[1:]) for p in parts if re.fullmatch(r"v[248]", p)), 1)
        bits = next((int(p[1:]) for p in reversed(parts) if re.fullmatch(r"[bsuf]\d+", p)), 0)
        counts[str(vec * bits // 8)] += 1
    return dict(counts)


def scale(x, y, vectorised: bool):
    """Run one variant; returns Triton's compiled kernel (None under the interpreter)."""
    grid = (triton.cdiv(x.numel(), BLOCK),)
    if vectorised:
        return _scale_vec[grid](x, y, x.numel(), BLOCK=BLOCK, num_warps=8)
    return _scale_strided[grid](x, y, x.numel(), 1, BLOCK=BLOCK, num_warps=8)


def _ptx_widths(kernel) -> dict[str, int]:
    asm = getattr(kernel, "asm", None) or {}
    return load_widths(asm["ptx"]) if "ptx" in asm else {}


def load_width(ctx: ProbeContext) -> ProbeResult:
    import torch

    x = torch.randn(STREAM_BYTES // 2, dtype=torch.bfloat16, device=ctx.device)
    y = torch.empty_like(x)
    flush = Flusher(ctx.device)
    out: dict[str, Any] = {}
    for name, vec in (("vector16", True), ("scalar", False)):
        y.fill_(float("nan"))
        kernel = scale(x, y, vec)
        if not torch.equal(y, x * 2):
            raise RuntimeError(f"{name} streaming kernel wrote wrong values")
        stats = timed_median(lambda v=vec: scale(x, y, v), flush=flush, budget_ms=60.0)
        out[name] = {**stats, "tbs": round(tbs(2 * STREAM_BYTES, stats["median_ms"]), 4),
                     "ptx_load_bytes": _ptx_widths(kernel)}
    value = out["scalar"]["median_ms"] / out["vector16"]["median_ms"]
    details = {**out, "method": f"y = 2x, bf16, {STREAM_BYTES >> 20} MiB, BLOCK {BLOCK}, "
                                "8 warps, L2 flushed; value = scalar time / vector time"}
    return ProbeResult(probe="load_width", value=value, unit="x", details=details)


@triton.jit
def _tile_ptr(X, Y, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    offs = rm.to(tl.int64)[:, None] * N + rn[None, :]
    x = tl.load(X + offs).to(tl.float32)
    tl.store(Y + offs, (x * 2.0).to(Y.dtype.element_ty))


@triton.jit
def _tile_desc_host(XD, Y, N, BM: tl.constexpr, BN: tl.constexpr):
    pm, pn = tl.program_id(0) * BM, tl.program_id(1) * BN
    x = XD.load([pm, pn]).to(tl.float32)
    rm = pm + tl.arange(0, BM)
    rn = pn + tl.arange(0, BN)
    tl.store(Y + rm.to(tl.int64)[:, None] * N + rn[None, :], (x * 2.0).to(Y.dtype.element_ty))


@triton.jit
def _tile_desc_dev(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    xd = tl.make_tensor_descriptor(X, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pm, pn = tl.program_id(0) * BM, tl.program_id(1) * BN
    x = xd.load([pm, pn]).to(tl.float32)
    rm = pm + tl.arange(0, BM)
    rn = pn + tl.arange(0, BN)
    tl.store(Y + rm.to(tl.int64)[:, None] * N + rn[None, :], (x * 2.0).to(Y.dtype.element_ty))


def tile_launchers(x, y) -> dict[str, Any]:
    """Variant name -> zero-argument launcher of y = 2x over [BM, BN] tiles of ``x``."""
    m, n = x.shape
    grid = (m // BM, n // BN)

    def pointer():
        _tile_ptr[grid](x, y, n, BM=BM, BN=BN, num_warps=4)

    def desc_host():
        from triton.tools.tensor_descriptor import TensorDescriptor

        xd = TensorDescriptor.from_tensor(x, block_shape=[BM, BN])
        _tile_desc_host[grid](xd, y, n, BM=BM, BN=BN, num_warps=4)

    def desc_device():
        import torch

        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                     device=x.device))
        _tile_desc_dev[grid](x, y, m, n, BM=BM, BN=BN, num_warps=4)

    return {"pointer": pointer, "descriptor_host": desc_host, "descriptor_device": desc_device}


def try_variant(launch, x, y) -> str:
    """Run a variant once and check it; '' when it works, else why not (one line)."""
    y.fill_(float("nan"))
    try:
        launch()
    except Exception as exc:  # recorded as data: this Triton cannot build the variant
        lines = str(exc).strip().splitlines()
        return f"{type(exc).__name__}: {lines[0][:300] if lines else ''}"
    import torch

    if not torch.equal(y, x * 2):
        return "ran but wrote wrong values"
    return ""


def tma_loads(ctx: ProbeContext) -> ProbeResult:
    import torch

    x = torch.randn(TILE_M, TILE_N, dtype=torch.bfloat16, device=ctx.device)
    y = torch.empty_like(x)
    nbytes = 2 * x.numel() * 2
    runs: dict[str, Any] = {}
    for name, launch in tile_launchers(x, y).items():
        why = try_variant(launch, x, y)
        if why and name == "pointer":
            raise RuntimeError(f"pointer tile kernel failed: {why}")
        if why:
            runs[name] = {"supported": False, "reason": why}
            continue
        stats = timed_median(launch, budget_ms=50.0)
        runs[name] = {"supported": True, **stats, "tbs": round(tbs(nbytes, stats["median_ms"]), 4)}
    desc = [r for k, r in runs.items() if k != "pointer" and r["supported"]]
    details = {**runs, "triton": triton.__version__,
               "method": f"y = 2x over {BM}x{BN} bf16 tiles of {TILE_M}x{TILE_N}, 4 warps, no "
                         "flush (buffers exceed the L2); value = best descriptor TB/s / pointer TB/s"}
    if not desc:
        reasons = "; ".join(f"{k}: {r['reason']}" for k, r in runs.items() if not r["supported"])
        return ProbeResult(probe="tma_loads", value=None, unit="x", details=details,
                           supported=False, reason=f"no tensor-descriptor path works ({reasons})")
    value = max(r["tbs"] for r in desc) / runs["pointer"]["tbs"]
    return ProbeResult(probe="tma_loads", value=value, unit="x", details=details)
