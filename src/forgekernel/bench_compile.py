"""The torch.compile figure of a `forge bench` problem, read from `forge compare`'s record."""

from __future__ import annotations

import statistics
from typing import Any


def timed_axes(row: dict[str, Any]) -> list[dict[str, int]] | None:
    """The workloads the judge's speedup came from (its visible timed ones), None if unknown."""
    axes = [w["axes"] for w in row.get("workloads") or [] if w.get("speedup") is not None]
    return axes or None


def compile_ratio(record: dict[str, Any], only: list[dict[str, int]] | None = None) -> dict[str, Any]:
    """``speedup_compile``: the geometric mean of torch.compile's time over the kernel's on the
    workloads where both matched the reference (``only``: of those, the ones the judge's
    speedup over eager came from, so that both figures cover the same sizes); a note for the
    workloads where torch.compile did not match."""
    ratios, notes = [], []
    for wl in record.get("workloads", []):
        if only is not None and wl.get("axes") not in only:
            continue
        rows = {r.get("kind"): r for r in wl.get("rows", [])}
        comp = rows.get("compile") or {}
        if comp.get("status") == "ok" and isinstance(comp.get("vs_kernel"), (int, float)) and comp["vs_kernel"] > 0:
            ratios.append(comp["vs_kernel"])
        else:
            label = " x ".join(f"{k}={v}" for k, v in wl.get("axes", {}).items())
            notes.append(f"{label}: torch.compile {comp.get('status', 'absent')} {comp.get('detail', '')}".strip())
    out: dict[str, Any] = {"compile_timing": record.get("label")}
    if ratios:
        out["speedup_compile"] = statistics.geometric_mean(ratios)
    if notes:
        out["compile_note"] = "; ".join(notes)[:300]
    return out
