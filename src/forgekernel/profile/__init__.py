"""Profiling: cost model and roofline, launch counting, Nsight Compute, compile reports.

Every measurement lands in a :class:`forgekernel.records.Profile` whose ``metrics`` use the
names in :data:`METRICS`, whatever tool produced them; ``Profile.sources`` says which tool
(or which ceilings) gave each one. A metric that could not be measured is absent, never 0.

Public entry points (heavy libraries are imported inside them, not here):

* :func:`profile_task` (``forgekernel.profile.api``): one Profile per workload, measured in a
  worker process through a delivery Runner;
* :func:`forgekernel.profile.launches.capture_launches`: kernel launches of a callable;
* :func:`forgekernel.profile.static.static_report`: registers, shared memory, spills,
  wgmma/TMA use of a Triton or CUDA candidate, compiled for sm_90 without a GPU;
* :mod:`forgekernel.profile.ncu`: Nsight Compute runs and CSV parsing;
* :mod:`forgekernel.profile.roofline`: minimal bytes, flops, floors, %SOL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

METRICS: dict[str, str] = {
    # timing, launches, cost model (worker; roofline)
    "launches": "kernel launches per call (count); CPU: Triton interpreter launches plus the "
                "aten ops an eager GPU run would launch",
    "median_ms": "median time of one call (ms); device time on a GPU, cpu-interpret on the CPU "
                 "(sources['median_ms'] says which)",
    "spread_ms": "20th-80th percentile spread of the call time (ms)",
    "bytes": "minimal bytes moved: every input read once and every output written once (B)",
    "flops": "floating-point operations of one call, from the task's [cost] flops formula or "
             "PyTorch's flop counter (matmul/conv/attention only) (FLOP)",
    "floor_ms": "roofline floor: max(bytes / size-matched bandwidth, flops / matrix peak) (ms)",
    "sol_pct": "speed of light: floor_ms / median_ms (%); device timings only",
    "achieved_tbs": "minimal bytes / median time (TB/s); device timings only",
    "bound": "bound class: 'memory', 'compute' (roofline) or 'latency' (the floor is below "
             "launches x launch overhead) (str)",
    # Nsight Compute (ncu), summed or time-weighted over the profiled kernels
    "ncu_ms": "summed kernel duration under Nsight Compute, gpu__time_duration (ms)",
    "dram_pct": "DRAM throughput as % of peak, time-weighted over kernels (%)",
    "dram_tbs": "achieved DRAM bandwidth, dram__bytes per second (TB/s)",
    "dram_bytes": "DRAM bytes read + written, summed over kernels (B)",
    "memory_pct": "memory speed-of-light: gpu__compute_memory_throughput % of peak (%)",
    "compute_pct": "compute speed-of-light: SM throughput % of peak (%)",
    "l1_hit_pct": "L1/TEX sector hit rate (%)",
    "l2_hit_pct": "L2 sector hit rate (%)",
    "occupancy_pct": "achieved occupancy: active warps % of the SM maximum (%)",
    "occupancy_theoretical_pct": "theoretical occupancy from the launch configuration (%)",
    "stall_top": "the warp-stall reason with the most cycles per issued instruction, e.g. "
                 "'long_scoreboard' (str)",
    "tensor_pct": "tensor-pipe activity % of peak (HMMA/GMMA pipes) (%)",
    # compile-time report (static) or ncu launch statistics
    "regs": "registers per thread, the most of any kernel (count)",
    "smem_bytes": "shared memory per block, static + dynamic, the most of any kernel (B)",
    "spills": "register spill stores reported by ptxas at compile time, summed over kernels (B)",
    "local_st_insts": "local-memory store instructions executed, summed over kernels; spills or "
                      "local arrays at run time (ncu) (count)",
    "uses_wgmma": "some kernel's code holds Hopper warpgroup MMA (wgmma / HGMMA) (bool)",
    "uses_tma": "some kernel's code holds TMA bulk-tensor copies (cp.async.bulk.tensor / "
                "UTMALDG) (bool)",
}
"""Documented metric names -> meaning and unit. Gates and prompts refer to these names."""

if TYPE_CHECKING:
    from forgekernel.records import Profile


def profile_task(task: Any, runner: Any, **kwargs: Any) -> list[Profile]:
    """See :func:`forgekernel.profile.api.profile_task`."""
    from forgekernel.profile.api import profile_task as _profile_task

    return _profile_task(task, runner, **kwargs)


__all__ = ["METRICS", "profile_task"]
