"""Timing for probes: CUDA events around each repetition, warm-up first, median of many.

Each repetition is bracketed by its own pair of events; an optional L2 flush (writing a
buffer larger than the L2) runs before each repetition, outside the timed region. All
helpers take plain callables and know nothing of probes.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

FLUSH_BYTES = 256 * 1024 * 1024
"""Size of the buffer written between repetitions to evict the L2 (60 MiB on an H200)."""


def median(values: list[float]) -> float:
    return float(statistics.median(values))


def spread(values: list[float]) -> float:
    """Inter-quartile range (0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    q = statistics.quantiles(values, n=4)
    return float(q[2] - q[0])


def summary(times_ms: list[float]) -> dict[str, Any]:
    """Median, spread and count of a list of repetition times (ms)."""
    return {"median_ms": median(times_ms), "spread_ms": spread(times_ms), "n": len(times_ms)}


class Flusher:
    """Evicts the L2 by zeroing a buffer larger than it."""

    def __init__(self, device: str = "cuda") -> None:
        import torch

        self.buf = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device=device)

    def __call__(self) -> None:
        self.buf.zero_()


def device_times(fn: Callable[[], Any], *, reps: int, warmup: int = 3,
                 flush: Callable[[], None] | None = None) -> list[float]:
    """Device milliseconds of ``reps`` calls of ``fn``, each timed by its own CUDA events."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for start, end in zip(starts, ends, strict=True):
        if flush is not None:
            flush()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]


def reps_for(estimate_ms: float, budget_ms: float = 60.0, lo: int = 7, hi: int = 100) -> int:
    """How many repetitions fit a time budget, at least ``lo`` and at most ``hi``."""
    if estimate_ms <= 0:
        return hi
    return max(lo, min(hi, int(budget_ms / estimate_ms)))


def timed_median(fn: Callable[[], Any], *, flush: Callable[[], None] | None = None,
                 budget_ms: float = 60.0) -> dict[str, Any]:
    """Estimate one call, pick a repetition count for the budget, return the summary."""
    first = device_times(fn, reps=3, warmup=2, flush=flush)
    reps = reps_for(median(first), budget_ms)
    return summary(device_times(fn, reps=reps, warmup=1, flush=flush))


def tbs(nbytes: float, ms: float) -> float:
    """Bytes moved in ``ms`` milliseconds, as TB/s."""
    return nbytes / (ms * 1e-3) / 1e12
