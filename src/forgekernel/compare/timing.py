"""How `forge compare` times every peer, in one process, with one method.

On a GPU (:class:`GpuClock`), for each call:

* **device time, host hidden**: zero a 256 MiB buffer (the L2 flush), enqueue a spin kernel
  (``torch.cuda._sleep``) long enough that the host has issued the whole call before the
  device reaches it, then CUDA events around the one call; the device time is end - start.
* **per-call time, host included**: the same flush, a synchronize (the device is idle), then
  events around the one call without the spin: what a caller waits for one call, its host
  launch path included.
* **host launch cost**: the host's wall time from calling to return, measured during the
  device-time call (the device busy with the spin, so the call returns once enqueued).

Calls of the peers are interleaved round by round (A B C A B C ...), warm-up rounds are
discarded, and each figure is the median over the timed rounds.

On the CPU (:class:`CpuClock`) only the per-call wall clock exists: it is labelled
``cpu-interpret`` (the Triton interpreter; those numbers exercise the code, they rank nothing).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

FLUSH_BYTES = 256 << 20
LEAD_FACTOR, LEAD_PAD_MS, LEAD_MAX_MS = 2.0, 0.05, 20.0
"""Spin length: LEAD_FACTOR x the warm-up rounds' median host ms + LEAD_PAD_MS, at most LEAD_MAX_MS."""

GPU_METHOD = ("device: 256 MiB L2 flush, torch.cuda._sleep lead, CUDA events around one call; "
              "per-call: flush, synchronize, events around one call (host included); "
              "host: wall time of the call with the device busy; medians over interleaved rounds")
CPU_METHOD = ("cpu-interpret: host wall clock around one call, median over interleaved rounds "
              "(no device time, no host launch cost)")

_perf = time.perf_counter


class CpuClock:
    label = "cpu-interpret"
    method = CPU_METHOD

    def device(self, fn: Callable[[], Any], lead_ms: float) -> tuple[float | None, float | None]:
        return None, None

    def per_call(self, fn: Callable[[], Any]) -> float:
        t0 = _perf()
        fn()
        return (_perf() - t0) * 1e3


class GpuClock:
    label = "device"
    method = GPU_METHOD

    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)
        self.spin = getattr(torch.cuda, "_sleep", None)
        self.cycles_per_ms = self._calibrate() if self.spin is not None else None

    def _calibrate(self) -> float | None:
        self.spin(2_000_000)  # clocks up first
        self.start.record()
        self.spin(1_000_000)
        self.end.record()
        self.torch.cuda.synchronize()
        ms = self.start.elapsed_time(self.end)
        return 1_000_000 / ms if ms > 0 else None

    def device(self, fn: Callable[[], Any], lead_ms: float) -> tuple[float, float]:
        """(device ms with the host hidden, host ms of the call)."""
        self.flush.zero_()
        if self.cycles_per_ms:
            self.spin(int(lead_ms * self.cycles_per_ms))
        self.start.record()
        t0 = _perf()
        fn()
        host = (_perf() - t0) * 1e3
        self.end.record()
        self.torch.cuda.synchronize()
        return self.start.elapsed_time(self.end), host

    def per_call(self, fn: Callable[[], Any]) -> float:
        """ms of one call from an idle device, its host path included."""
        self.flush.zero_()
        self.torch.cuda.synchronize()
        self.start.record()
        fn()
        self.end.record()
        self.torch.cuda.synchronize()
        return self.start.elapsed_time(self.end)


def lead_for(host_ms: list[float]) -> float:
    if not host_ms:
        return 1.0
    return min(LEAD_MAX_MS, LEAD_FACTOR * statistics.median(host_ms) + LEAD_PAD_MS)


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def measure(calls: dict[str, Callable[[], Any]], clock: Any, *, reps: int,
            warmup: int) -> dict[str, dict[str, Any]]:
    """Each call's medians: device_ms, per_call_ms, host_us (None where the clock has none),
    and n; a call that raises is left out of later rounds with its error (``failed``)."""
    dev: dict[str, list[float]] = {k: [] for k in calls}
    per: dict[str, list[float]] = {k: [] for k in calls}
    host: dict[str, list[float]] = {k: [] for k in calls}
    warm: dict[str, list[float]] = {k: [] for k in calls}
    failed: dict[str, str] = {}
    for r in range(-warmup, reps):
        for name, fn in calls.items():
            if name in failed:
                continue
            try:
                d, h = clock.device(fn, lead_for(warm[name]))
                p = clock.per_call(fn)
            except Exception as exc:  # one peer's failure is its row, never the comparison's
                failed[name] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:160] if str(exc).strip() else ''}"
                continue
            if r < 0:
                warm[name] += [h] if h is not None else []
                continue
            if d is not None:
                dev[name].append(d)
                host[name].append(h)
            per[name].append(p)
    out = {}
    for name in calls:
        h = _median(host[name])
        out[name] = {"device_ms": _median(dev[name]), "per_call_ms": _median(per[name]),
                     "host_us": h * 1e3 if h is not None else None, "n": len(per[name]),
                     "failed": failed.get(name)}
    return out
