"""Measure one workload in the current (worker) process: time, launches, cost, floor, bound.

Everything here runs where the subject runs (a worker process); it imports torch inside
functions. :func:`profile_workload` is the reusable core (the judge worker may call it too).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from forgekernel.profile import roofline
from forgekernel.profile.launches import capture_launches
from forgekernel.profile.roofline import Ceilings, Floor
from forgekernel.records import Profile, TaskSpec, Workload

LAUNCH_US_ASSUMED = 2.0
"""Per-launch overhead (us) assumed for the latency class when nothing measured it."""


def time_call(fn: Callable[[], Any], *, on_gpu: bool, cpu_reps: int = 3) -> tuple[float, float]:
    """(median_ms, spread_ms): do_bench median and 20-80% spread on a GPU, wall clock on CPU."""
    if on_gpu:
        import triton.testing

        med, lo, hi = triton.testing.do_bench(fn, warmup=25, rep=100, quantiles=[0.5, 0.2, 0.8])
        return float(med), float(hi - lo)
    times = []
    for _ in range(cpu_reps):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), max(times) - min(times)


def counter_flops(fn: Callable[[], Any]) -> float | None:
    """Flops seen by PyTorch's flop formulas (matmul/conv/attention only); None when it saw none."""
    from forgekernel.flops import FlopCount

    with FlopCount() as counter:
        fn()
    total = counter.total
    return float(total) if total > 0 else None


def bound_class(fl: Floor, launches: int | None, launch_us: float) -> str:
    """'latency' when the floor is below launches x launch overhead, else the roofline side."""
    if launches and fl.floor_ms * 1e3 < launches * launch_us:
        return "latency"
    return fl.bound


def profile_workload(task: TaskSpec, ref: Any, subject: Callable[..., Any], wl: Workload,
                     inputs: tuple[Any, ...], *, device: str, timing_label: str,
                     ceilings: Ceilings | None, launch_us: float | None = None,
                     repeats: int = 3) -> Profile:
    """One Profile (no ncu, no static report): timings, launches, bytes, flops, floor, bound."""
    on_gpu = device.startswith("cuda")

    def call() -> Any:
        return subject(*inputs)

    trace = capture_launches(call, device=device, repeats=repeats)
    median, spread = time_call(call, on_gpu=on_gpu)
    metrics: dict[str, Any] = {"median_ms": median, "spread_ms": spread, "launches": trace.launches}
    sources = {"median_ms": (f"{timing_label}: triton.testing.do_bench median" if on_gpu
                             else f"{timing_label}: host wall clock, median of 3"),
               "launches": trace.source}
    notes = list(trace.notes)
    cost = roofline.workload_cost(task, ref, wl)
    nbytes = roofline.cost_bytes(task, wl, cost)
    metrics["bytes"] = nbytes
    sources["bytes"] = "task [cost] bytes" if task.cost.bytes else \
        "inputs, parameters and buffers read + outputs written once"
    flops, sources["flops"] = cost.flops, cost.flops_source
    if flops is not None:
        metrics["flops"] = flops
    else:
        notes.append("flops unknown: no [cost] flops formula and the flop counter saw no "
                     "matmul/conv/attention")
    if cost.note:
        notes.append(cost.note)
    if ceilings is None:
        notes.append("no ceilings for this device/arch: floor, %SOL and bound not computed")
    else:
        _roofline(metrics, sources, ceilings, task, nbytes, flops, timing_label,
                  launch_us if launch_us is not None else ceilings.launch_us)
    return Profile(axes=dict(wl.axes), metrics=metrics, kernels=trace.kernels,
                   sources=sources, notes=tuple(notes))


def _roofline(metrics: dict[str, Any], sources: dict[str, str], ceilings: Ceilings,
              task: TaskSpec, nbytes: int, flops: float | None, timing_label: str,
              launch_us: float | None) -> None:
    fl = roofline.floor(nbytes, flops, ceilings, roofline.compute_dtype(task))
    metrics["floor_ms"] = fl.floor_ms
    sources["ceilings"] = ceilings.source
    sources["floor_ms"] = (f"max(bytes / {fl.bandwidth_tbs:.2f} TB/s size-matched copy"
                           + (f", flops / {fl.peak_tflops:g} TFLOP/s" if fl.peak_tflops else "")
                           + (f" [{fl.peak_source}]" if fl.peak_source else "")
                           + ")")
    if timing_label == "device":
        metrics["sol_pct"] = fl.sol_pct(metrics["median_ms"])
        metrics["achieved_tbs"] = nbytes / (metrics["median_ms"] * 1e-3) / 1e12
    us = launch_us if launch_us is not None else LAUNCH_US_ASSUMED
    metrics["bound"] = bound_class(fl, metrics.get("launches"), us)
    how = "measured" if launch_us is not None else "assumed"
    sources["bound"] = f"roofline side, or latency if floor < launches x {us:.2f} us ({how})"


def measure_launch_us(reps: int = 200) -> float:
    """Back-to-back launch cost of a tiny eager op on the current GPU (us per launch)."""
    import torch

    x = torch.zeros(1, device="cuda")
    for _ in range(10):
        x.add_(1)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        x.add_(1)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / reps


def measure_ceilings(device_name: str) -> Ceilings:
    """Quick ceilings on an unknown GPU: copy bandwidth at 256 MiB and 1 GiB, a bf16 matmul."""
    import torch
    import triton.testing

    table = {}
    for mib in (256, 1024):
        src = torch.empty(mib << 20, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        ms = triton.testing.do_bench(lambda s=src, d=dst: d.copy_(s), warmup=10, rep=50,
                                     return_mode="median")
        table[mib] = 2 * (mib << 20) / (ms * 1e-3) / 1e12
        del src, dst
    a = torch.randn(4096, 4096, dtype=torch.bfloat16, device="cuda")
    ms = triton.testing.do_bench(lambda: a @ a, warmup=10, rep=50, return_mode="median")
    tflops = 2 * 4096**3 / (ms * 1e-3) / 1e12
    return Ceilings(device=device_name, bandwidth_tbs=table[1024], bandwidth_by_mib=table,
                    tflops={"bfloat16": tflops}, launch_us=measure_launch_us(),
                    source=f"measured in the profile worker on {device_name} (copy 256 MiB/1 GiB, "
                           "bf16 matmul 4096^3)")
