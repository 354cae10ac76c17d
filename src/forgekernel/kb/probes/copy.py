"""Device-to-device copy bandwidth by buffer size (bytes read + written, L2 flushed).

One sweep (shared by both probes through ``ctx.memo``) times ``dst.copy_(src)`` on random
bf16 buffers from 1 MiB to 4 GiB. ``copy_large`` is the ceiling a streaming kernel can
expect at large sizes; ``copy_small`` shows how far below it a copy of a size that fits
inside the L2 lands (launch and ramp-up are no longer hidden).
"""

from __future__ import annotations

from typing import Any

from forgekernel.kb.probes import ProbeContext, ProbeResult
from forgekernel.kb.probes.timing import Flusher, median, tbs, timed_median

SIZES_MIB = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
LARGE_MIB = 256
"""Buffers at least this large count towards the large-buffer ceiling."""
SMALL_MIB = 16
CEILING_MIB = 1024
"""The large-buffer reference bandwidth is the median over buffers >= this size."""


def measure_sweep(ctx: ProbeContext) -> dict[int, dict[str, Any]]:
    """Time the copy at every size; MiB -> {tbs, median_ms, spread_ms, n}."""
    if "copy_sweep" in ctx.memo:
        return ctx.memo["copy_sweep"]
    import torch

    flush = Flusher(ctx.device)
    out: dict[int, dict[str, Any]] = {}
    for mib in SIZES_MIB:
        n = mib * (1 << 20) // 2
        src = torch.randn(n, dtype=torch.bfloat16, device=ctx.device)
        dst = torch.empty_like(src)
        stats = timed_median(lambda d=dst, s=src: d.copy_(s), flush=flush, budget_ms=40.0)
        if not torch.equal(dst, src):
            raise RuntimeError(f"copy of {mib} MiB produced a different buffer")
        out[mib] = {**stats, "tbs": tbs(2 * n * 2, stats["median_ms"])}
        del src, dst
    torch.cuda.empty_cache()
    ctx.memo["copy_sweep"] = out
    return out


def analyse(by_mib: dict[int, float]) -> dict[str, float]:
    """From a size -> TB/s table: the large-buffer min, the ceiling and the small ratio."""
    large = [v for s, v in by_mib.items() if s >= LARGE_MIB]
    ceiling = [v for s, v in by_mib.items() if s >= CEILING_MIB]
    if not large or not ceiling or SMALL_MIB not in by_mib:
        raise ValueError(f"copy sweep needs sizes >= {CEILING_MIB} MiB and {SMALL_MIB} MiB")
    mid = median(ceiling)
    return {"large_min_tbs": min(large), "ceiling_tbs": mid,
            "small_ratio": by_mib[SMALL_MIB] / mid}


def results_from_sweep(sweep: dict[int, dict[str, Any]]) -> tuple[ProbeResult, ProbeResult]:
    """Both probes' results from one sweep (pure: used on the CPU by tests too)."""
    by_mib = {int(s): float(r["tbs"]) for s, r in sweep.items()}
    a = analyse(by_mib)
    table = {str(s): round(v, 4) for s, v in sorted(by_mib.items())}
    times = {str(s): {k: r[k] for k in ("median_ms", "spread_ms", "n")} for s, r in sorted(sweep.items())}
    common = {"by_mib": table, "ceiling_tbs": round(a["ceiling_tbs"], 4), "times": times,
              "method": "dst.copy_(src), random bf16, L2 flushed before each rep, "
                        "TB/s = 2 x buffer bytes / median time"}
    large = ProbeResult(probe="copy_large", value=a["large_min_tbs"], unit="TB/s",
                        details={**common, "large_from_mib": LARGE_MIB})
    small = ProbeResult(probe="copy_small", value=a["small_ratio"], unit="x",
                        details={**common, "small_mib": SMALL_MIB,
                                 "small_tbs": round(by_mib[SMALL_MIB], 4)})
    return large, small


def copy_large(ctx: ProbeContext) -> ProbeResult:
    return results_from_sweep(measure_sweep(ctx))[0]


def copy_small(ctx: ProbeContext) -> ProbeResult:
    return results_from_sweep(measure_sweep(ctx))[1]
