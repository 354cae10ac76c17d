"""Reference analysis at the start of a run: roofline floors per workload, profiles if any.

Written to ``reference.json``. The floors use the shared H200 ceilings (the knowledge base
may certify its own later); the profiles come from the profiler when one is available.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from forgekernel.errors import ForgeError
from forgekernel.records import TaskSpec


def floors(task: TaskSpec) -> list[dict[str, Any]]:
    """Minimal bytes, flops and the roofline floor of every workload."""
    from forgekernel.profile import roofline
    from forgekernel.task import load_module

    module = load_module(Path(task.root) / "reference.py")
    out = []
    for w in task.workloads:
        row: dict[str, Any] = {"axes": w.axes, "smoke": w.smoke}
        try:
            cost = roofline.workload_cost(task, module, w)
        except ForgeError as exc:  # a reference that misbehaves on meta: said, not fatal here
            row["note"] = str(exc)
            out.append(row)
            continue
        if cost.note:
            row["note"] = cost.note
        if cost.outputs is None and not task.cost.bytes:
            out.append(row)
            continue
        nbytes = roofline.cost_bytes(task, w, cost)
        f = roofline.floor(nbytes, cost.flops, roofline.H200_SHARED, roofline.compute_dtype(task))
        row.update(f.model_dump(mode="json"))
        row["flops_source"] = cost.flops_source
        out.append(row)
    return out


def analyse_reference(task: TaskSpec, runner: Any, profiler: Any | None) -> dict[str, Any]:
    """The content of reference.json."""
    from forgekernel.profile.roofline import H200_SHARED

    data: dict[str, Any] = {"task": task.name, "delivery": runner.name,
                            "ceilings": H200_SHARED.source, "floors": floors(task),
                            "profiles": [], "profile_note": ""}
    if profiler is None:
        data["profile_note"] = "no profiler available: roofline floors only"
        return data
    try:
        data["profiles"] = [p.model_dump(mode="json") for p in profiler(task, runner, None)]
    except ForgeError as exc:
        data["profile_note"] = f"profiling the reference failed: {exc}"
    return data


def speedup_bound(reference: dict[str, Any]) -> float | None:
    """The most any kernel can gain over the reference, by the roofline: the geometric mean,
    over the workloads profiled with device timing, of the reference's median over its floor
    (the judge reports the same geometric mean of speedups). None without such profiles
    (on the CPU interpreter a floor says nothing about the timings)."""
    ratios = []
    for prof in reference.get("profiles") or []:
        metrics = prof.get("metrics") or {}
        if not str((prof.get("sources") or {}).get("median_ms", "")).startswith("device"):
            continue
        median, floor = metrics.get("median_ms"), metrics.get("floor_ms")
        if isinstance(median, (int, float)) and isinstance(floor, (int, float)) and median > 0 and floor > 0:
            ratios.append(median / floor)
    return statistics.geometric_mean(ratios) if ratios else None


def bound_note(bound: float | None, target: float) -> str | None:
    """One line on the roofline bound and whether the target is within it."""
    if bound is None:
        return None
    line = (f"roofline bound: a kernel can be at most about {bound:.3g}x the reference at these "
            "workloads (geometric mean of reference time over floor)")
    if target > bound:
        line += (f"; the target {target:g}x is above it, so the run is not expected to meet it "
                 "(the ceilings are measured: a few percent past them has been seen, not more)")
    return line
