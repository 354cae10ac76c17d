"""Timing: how one call is measured, and summaries as :class:`~forgekernel.records.Measurement`.

Method (GPU, :class:`CudaClock`):

1. before each call the caller refreshes that call's inputs in place with fresh values and
   the clock zero-fills a buffer twice the size of the L2 cache (the flush, enqueued before
   the start event, so it is never timed);
2. a lead: a spin kernel on the stream (``torch.cuda._sleep``, calibrated to milliseconds)
   that keeps the device busy while the host is still inside the call enqueuing its work.
   Without it the device idles between the start event and the call's first kernel for as
   long as the call's Python path takes (about 0.08 ms for a Triton launch through the
   judge's wrapper on the H200), and that host latency lands in the device time of small
   workloads, unevenly from process to process. :func:`interleave` sizes each callable's
   lead from its host time in the warm-up rounds (``lead_for``); work a call hides in the
   lead on another stream is caught by the launch audit (all device work must run on the
   call's stream);
3. a start event, the call, an end event, all on the current stream; then a device-wide
   synchronize and a third ("tail") event. The device time is end - start; the tail
   (third - end) shows device work that outlived the call on another stream: it is compared
   with the reference's tail by the caller;
4. host time of the call (launch to return) is recorded next to it;
5. calls of several callables are interleaved round by round (A B A' ...), the first
   ``warmup`` rounds are discarded, and each callable's samples are summarised as the median
   and the spread (interquartile range).

On the CPU (:class:`HostClock`) the clock is ``time.perf_counter`` and every measurement is
labelled ``cpu-interpret``: those numbers only exercise the code path.

The timer functions are bound when a clock is created, which the worker does before it
imports candidate code, so later patching cannot reach them.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from forgekernel.records import Measurement

_perf = time.perf_counter

LEAD_WARMUP_MS = 0.1
"""Lead during warm-up rounds, before a callable's host time is known."""
LEAD_FACTOR, LEAD_PAD_MS, LEAD_MAX_MS = 1.5, 0.02, 0.5
"""Timed rounds: lead = min(LEAD_MAX_MS, LEAD_FACTOR x median warm-up host ms + LEAD_PAD_MS).
The cap keeps host-heavy calls from hiding much host work; their host time is flagged."""


def lead_for(host_ms: list[float]) -> float:
    """The lead (ms) for a callable whose warm-up calls took ``host_ms`` on the host."""
    if not host_ms:
        return LEAD_WARMUP_MS
    return min(LEAD_MAX_MS, LEAD_FACTOR * statistics.median(host_ms) + LEAD_PAD_MS)


@dataclass
class Series:
    """Samples of one callable: device (or host-clock) ms, host ms of the call, tail ms."""

    device_ms: list[float] = field(default_factory=list)
    host_ms: list[float] = field(default_factory=list)
    tail_ms: list[float] = field(default_factory=list)


def spread(samples: list[float]) -> float:
    """Interquartile range (0 for fewer than two samples)."""
    if len(samples) < 2:
        return 0.0
    q = statistics.quantiles(samples, n=4, method="inclusive")
    return q[2] - q[0]


def measurement(samples: list[float], label: str) -> Measurement:
    return Measurement(median_ms=statistics.median(samples), spread_ms=spread(samples),
                       n=len(samples), label=label)


class HostClock:
    """Wall clock around the call (the CPU runner: labelled cpu-interpret)."""

    label = "cpu-interpret"

    def time(self, fn: Callable[[], Any], lead_ms: float = 0.0) -> tuple[Any, float, float, float]:
        t0 = _perf()
        out = fn()
        ms = (_perf() - t0) * 1e3
        return out, ms, ms, 0.0


class CudaClock:
    """CUDA events on the current stream, L2 flush, lead, device-wide synchronize, tail event."""

    label = "device"

    def __init__(self, l2_bytes: int) -> None:
        import torch

        self.torch = torch
        self._sync = torch.cuda.synchronize
        self._record = torch.cuda.Event.record
        self._elapsed = torch.cuda.Event.elapsed_time
        self._current = torch.cuda.current_stream
        self.flush = torch.empty(max(2 * l2_bytes, 1 << 20), dtype=torch.uint8, device="cuda")
        self.events = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        self._spin = getattr(torch.cuda, "_sleep", None)
        self.cycles_per_ms = self._calibrate() if self._spin is not None else None
        """Spin-kernel cycles per millisecond (None: no lead, device time may hold host latency)."""

    def _calibrate(self) -> float | None:
        start, end, _ = self.events
        stream = self._current()
        self._spin(2_000_000)  # a few ms of spinning first, so the clocks are up
        self._record(start, stream)
        self._spin(1_000_000)
        self._record(end, stream)
        self._sync()
        ms = self._elapsed(start, end)
        return 1_000_000 / ms if ms > 0 else None

    def time(self, fn: Callable[[], Any], lead_ms: float = 0.0) -> tuple[Any, float, float, float]:
        start, end, tail = self.events
        stream = self._current()
        self.flush.zero_()
        if lead_ms > 0 and self.cycles_per_ms:
            self._spin(int(lead_ms * self.cycles_per_ms))
        self._record(start, stream)
        t0 = _perf()
        out = fn()
        host = (_perf() - t0) * 1e3
        self._record(end, stream)
        self._sync()
        self._record(tail, stream)
        self._sync()
        return out, self._elapsed(start, end), host, self._elapsed(end, tail)


def interleave(calls: list[Callable[[], Any]], clock: Any, *, rounds: int, warmup: int,
               before: Callable[[int, int], None], after: Callable[[int, int, Any], None],
               lead: bool = True) -> list[Series]:
    """Time ``calls`` round-robin; ``before(round, k)`` / ``after(round, k, out)`` run untimed.

    Warm-up rounds have negative round numbers and differ from timed ones only in the lead
    before the call (fixed in warm-up, then sized from the warm-up host times).
    """
    series = [Series() for _ in calls]
    warm_host: list[list[float]] = [[] for _ in calls]
    for r in range(-warmup, rounds):
        for k, fn in enumerate(calls):
            before(r, k)
            lead_ms = 0.0 if not lead else lead_for(warm_host[k]) if r >= 0 else LEAD_WARMUP_MS
            out, dev, host, tail = clock.time(fn, lead_ms=lead_ms)
            after(r, k, out)
            if r < 0:
                warm_host[k].append(host)
            else:
                series[k].device_ms.append(dev)
                series[k].host_ms.append(host)
                series[k].tail_ms.append(tail)
            del out
    return series


def replay_graph(fn: Callable[[], Any], clock: CudaClock, *, rounds: int,
                 before: Callable[[int], None]) -> tuple[Series, Any]:
    """Capture ``fn`` in a CUDA graph and time its replays; returns (series, static output).

    Raises whatever capture raises (callers report graph mode as unavailable then).
    """
    torch = clock.torch
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = fn()
    series = Series()
    for r in range(-2, rounds):
        before(r)
        _, dev, host, tail = clock.time(graph.replay)
        if r >= 0:
            series.device_ms.append(dev)
            series.host_ms.append(host)
            series.tail_ms.append(tail)
    return series, static_out
