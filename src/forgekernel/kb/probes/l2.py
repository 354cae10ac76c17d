"""L2 size effect: read bandwidth of a working set re-read many times, by its size.

A persistent Triton kernel reads a bf16 buffer ``passes`` times in one launch; each pass
shifts which program reads which tile, and loads use ``.cg`` (cache in L2, not L1), so a
working set that fits in the L2 is served from it while a larger one streams from HBM.
No flush: the point is the hot working set. Bandwidth = passes x bytes / median time.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl

from forgekernel.kb.probes import ProbeContext, ProbeResult
from forgekernel.kb.probes.timing import tbs, timed_median

SIZES_MIB = (8, 16, 24, 32, 48, 64, 96, 128, 256, 1024)
HOT_MIB = 24
"""Working set that fits in the L2 (60 MiB on an H200) with room to spare."""
COLD_MIB = 1024
BLOCK = 2048
PROGRAMS_PER_SM = 8


@triton.jit
def _read_passes(X, OUT, n_tiles, passes, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for p in range(passes):
        for t in range(pid, n_tiles, nprog):
            tile = ((t + p) % n_tiles).to(tl.int64)
            offs = tile * BLOCK + tl.arange(0, BLOCK)
            acc += tl.load(X + offs, cache_modifier=".cg").to(tl.float32)
    tl.store(OUT + pid * BLOCK + tl.arange(0, BLOCK), acc)


def read_passes(x, passes: int, programs: int):
    """Launch the kernel over ``x`` (numel a multiple of BLOCK); returns the partial sums."""
    import torch

    out = torch.empty((programs, BLOCK), dtype=torch.float32, device=x.device)
    _read_passes[(programs,)](x, out, x.numel() // BLOCK, passes, BLOCK=BLOCK, num_warps=8)
    return out


def check(x, passes: int, programs: int) -> float:
    """Error of the kernel's total against passes x sum(x) (float64), relative to sum |x|."""
    got = read_passes(x, passes, programs).double().sum().item()
    want = passes * x.double().sum().item()
    return abs(got - want) / max(passes * x.double().abs().sum().item(), 1e-9)


def analyse(by_mib: dict[int, float]) -> float:
    """Hot / cold bandwidth ratio from a size -> TB/s table."""
    return by_mib[HOT_MIB] / by_mib[COLD_MIB]


def l2_reuse(ctx: ProbeContext) -> ProbeResult:
    import torch

    props = torch.cuda.get_device_properties(0)
    programs = props.multi_processor_count * PROGRAMS_PER_SM
    by_mib: dict[int, float] = {}
    times: dict[str, Any] = {}
    for mib in SIZES_MIB:
        x = torch.randn(mib * (1 << 20) // 2, dtype=torch.bfloat16, device=ctx.device)
        passes = max(2, min(256, 1024 // mib))
        err = check(x, passes, programs)
        if err > 1e-3:
            raise RuntimeError(f"read kernel sum is off by {err:.2e} (relative) at {mib} MiB")
        stats = timed_median(lambda x=x, p=passes: read_passes(x, p, programs), budget_ms=40.0)
        by_mib[mib] = tbs(passes * x.numel() * 2, stats["median_ms"])
        times[str(mib)] = {**stats, "passes": passes}
        del x
    details = {"by_mib": {str(k): round(v, 4) for k, v in by_mib.items()}, "times": times,
               "hot_mib": HOT_MIB, "cold_mib": COLD_MIB,
               "l2_bytes": int(getattr(props, "L2_cache_size", 0)),
               "method": f"one launch re-reads the buffer `passes` times; {programs} programs, "
                         f"BLOCK {BLOCK}, .cg loads, no flush"}
    return ProbeResult(probe="l2_reuse", value=analyse(by_mib), unit="x", details=details)
