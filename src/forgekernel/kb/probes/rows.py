"""Row reductions (an RMSNorm over bf16 rows, fp32 math): how to map rows to programs.

Three probes share one kernel family. A program normalises a tile of ``ROWS`` rows; the
plain grid launches one program per tile, the persistent grid ``programs`` programs that
loop over tiles. ``rows_multirow`` compares one row per program with several, across row
lengths; ``rows_num_warps`` sweeps the warps of one-row programs; ``rows_persistent``
compares the grids on many short rows. Every variant's output is checked against a
float32 reference before it is timed. Each shape reads 256 MiB (512 MiB for the persistent
one) and writes as much, L2 flushed before each rep.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl

from forgekernel.kb.probes import ProbeContext, ProbeResult
from forgekernel.kb.probes.timing import Flusher, tbs, timed_median

EPS = 1e-6
READ_BYTES = 256 << 20
MULTIROW_N = (256, 512, 1024, 4096)
MULTIROW_ROWS = (1, 2, 4, 8, 16)
MULTIROW_CLAIM_N = 512
MAX_TILE = 16384
"""Largest tile (elements) a program holds in registers in these probes."""
WARPS_N = (1024, 4096, 16384)
WARPS = (1, 2, 4, 8, 16)
WARPS_CLAIM_N = 16384
WARPS_DEFAULT = 4
PERSIST_M, PERSIST_N, PERSIST_ROWS, PERSIST_WARPS = 1 << 21, 128, 4, 4
PERSIST_PER_SM = (2, 4, 8, 16)


@triton.jit
def _rms_tile(X, W, Y, M, N, eps, tile, BLOCK_N: tl.constexpr, ROWS: tl.constexpr):
    rows = tile * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    m = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows.to(tl.int64)[:, None] * N + cols[None, :]
    x = tl.load(X + offs, mask=m, other=0.0).to(tl.float32)
    r = tl.rsqrt(tl.sum(x * x, axis=1) / N + eps)
    w = tl.load(W + cols, mask=cols < N, other=0.0).to(tl.float32)
    tl.store(Y + offs, (x * r[:, None] * w[None, :]).to(Y.dtype.element_ty), mask=m)


@triton.jit
def _rms_plain(X, W, Y, M, N, eps, BLOCK_N: tl.constexpr, ROWS: tl.constexpr):
    _rms_tile(X, W, Y, M, N, eps, tl.program_id(0), BLOCK_N, ROWS)


@triton.jit
def _rms_persistent(X, W, Y, M, N, eps, n_tiles, BLOCK_N: tl.constexpr, ROWS: tl.constexpr):
    for t in range(tl.program_id(0), n_tiles, tl.num_programs(0)):
        _rms_tile(X, W, Y, M, N, eps, t, BLOCK_N, ROWS)


def default_warps(elements: int) -> int:
    """The common heuristic (as in widely used Triton norm kernels): warps by tile size."""
    return 4 if elements < 2048 else 8 if elements < 8192 else 16


def rmsnorm(x, w, y, *, rows: int = 1, num_warps: int | None = None,
            programs: int | None = None) -> None:
    """y = rmsnorm(x) * w with ``rows`` rows per tile; ``programs`` set = persistent grid."""
    m, n = x.shape
    block_n = triton.next_power_of_2(n)
    warps = num_warps or default_warps(rows * block_n)
    n_tiles = triton.cdiv(m, rows)
    if programs is None:
        _rms_plain[(n_tiles,)](x, w, y, m, n, EPS, BLOCK_N=block_n, ROWS=rows, num_warps=warps)
    else:
        _rms_persistent[(min(programs, n_tiles),)](x, w, y, m, n, EPS, n_tiles, BLOCK_N=block_n,
                                                   ROWS=rows, num_warps=warps)


def reference(x, w):
    """float32 RMSNorm of bf16 rows (what the kernels compute before the final cast)."""
    import torch

    h = x.float()
    return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + EPS) * w.float()


def max_rel_err(y, ref) -> float:
    return float((y.float() - ref).abs().max() / ref.abs().max().clamp_min(1e-12))


class _Bench:
    """Inputs of one shape plus a checked, timed run of any variant on them."""

    def __init__(self, ctx: ProbeContext, m: int, n: int, flush: Flusher) -> None:
        import torch

        gen = torch.Generator(device=ctx.device).manual_seed(m ^ n)
        self.x = torch.randn(m, n, dtype=torch.bfloat16, device=ctx.device, generator=gen)
        self.w = (1 + 0.1 * torch.randn(n, device=ctx.device, generator=gen)).to(torch.bfloat16)
        self.y = torch.empty_like(self.x)
        self.ref = reference(self.x, self.w)
        self.flush = flush
        self.nbytes = 2 * self.x.numel() * 2 + n * 2

    def time(self, **variant: Any) -> dict[str, Any]:
        self.y.fill_(float("nan"))
        rmsnorm(self.x, self.w, self.y, **variant)
        err = max_rel_err(self.y, self.ref)
        if not err < 2e-2:
            raise RuntimeError(f"rmsnorm variant {variant} is wrong: max rel err {err:.3g}")
        stats = timed_median(lambda: rmsnorm(self.x, self.w, self.y, **variant),
                             flush=self.flush, budget_ms=30.0)
        return {**stats, "tbs": round(tbs(self.nbytes, stats["median_ms"]), 4),
                "max_rel_err": round(err, 6)}


def _flusher(ctx: ProbeContext) -> Flusher:
    if "flusher" not in ctx.memo:
        ctx.memo["flusher"] = Flusher(ctx.device)
    return ctx.memo["flusher"]


def speedup(times: dict[str, dict[str, Any]], baseline: str, candidates: list[str]) -> tuple[float, str]:
    """Baseline median / best candidate median, and which candidate was best."""
    best = min(candidates, key=lambda k: times[k]["median_ms"])
    return times[baseline]["median_ms"] / times[best]["median_ms"], best


def rows_multirow(ctx: ProbeContext) -> ProbeResult:
    table: dict[str, dict[str, Any]] = {}
    for n in MULTIROW_N:
        bench = _Bench(ctx, READ_BYTES // (2 * n), n, _flusher(ctx))
        table[str(n)] = {f"rows{r}": bench.time(rows=r) for r in MULTIROW_ROWS if r * n <= MAX_TILE}
        del bench
    for runs in table.values():
        multi = [k for k in runs if k != "rows1"]
        runs["speedup"], runs["best"] = speedup(runs, "rows1", multi)
    claim = table[str(MULTIROW_CLAIM_N)]
    details = {"by_n": table, "claim_n": MULTIROW_CLAIM_N,
               "method": "rmsnorm bf16, 256 MiB read; warps by tile size (4 < 2048 <= 8 < 8192 "
                         "<= 16); value = one-row time / best multi-row time at the claim N"}
    return ProbeResult(probe="rows_multirow", value=claim["speedup"], unit="x", details=details)


def rows_num_warps(ctx: ProbeContext) -> ProbeResult:
    table: dict[str, dict[str, Any]] = {}
    for n in WARPS_N:
        bench = _Bench(ctx, READ_BYTES // (2 * n), n, _flusher(ctx))
        runs = {f"warps{w}": bench.time(num_warps=w) for w in WARPS if n // (32 * w) <= 128}
        runs["speedup"], runs["best"] = speedup(runs, f"warps{WARPS_DEFAULT}", list(runs))
        table[str(n)] = runs
        del bench
    details = {"by_n": table, "claim_n": WARPS_CLAIM_N, "default_warps": WARPS_DEFAULT,
               "method": "one row per program, rmsnorm bf16, 256 MiB read; warps with more "
                         "than 128 row elements per thread skipped; value = default-warps time "
                         "/ best time at the claim N"}
    return ProbeResult(probe="rows_num_warps", value=table[str(WARPS_CLAIM_N)]["speedup"],
                       unit="x", details=details)


def rows_persistent(ctx: ProbeContext) -> ProbeResult:
    import torch

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    bench = _Bench(ctx, PERSIST_M, PERSIST_N, _flusher(ctx))
    runs = {"plain": bench.time(rows=PERSIST_ROWS, num_warps=PERSIST_WARPS)}
    for k in PERSIST_PER_SM:
        runs[f"persistent{k}"] = bench.time(rows=PERSIST_ROWS, num_warps=PERSIST_WARPS,
                                            programs=k * sms)
    value, best = speedup(runs, "plain", [k for k in runs if k != "plain"])
    details = {**runs, "best": best, "sms": sms,
               "method": f"rmsnorm bf16 {PERSIST_M} x {PERSIST_N}, {PERSIST_ROWS} rows per tile, "
                         f"{PERSIST_WARPS} warps; plain = one program per tile, persistent = "
                         "k x SMs programs looping; value = plain time / best persistent time"}
    return ProbeResult(probe="rows_persistent", value=value, unit="x", details=details)
