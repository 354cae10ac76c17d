"""What the coder's ``run_profile`` tool returns: `forge profile --json` of its kernel, read
down to the figures that decide the next edit (per visible workload: time and its source,
roofline floor and %SOL, launches, registers, shared memory, spills, tensor-core use, the
kernels by time share) instead of the whole JSON document."""

from __future__ import annotations

import json
from typing import Any

from forgekernel.agents.kernel_names import kernels_line
from forgekernel.records import Profile

SHOWN = ("median_ms", "floor_ms", "sol_pct", "launches", "bound", "regs", "smem_bytes", "spills",
         "uses_wgmma", "uses_tma")
"""Metrics shown, in this order, when the profile has them."""


def digest(output: str) -> str:
    """The figures of a `forge profile --json` output; its last lines when it is not one."""
    try:
        doc = json.loads(output[output.index("{"):])
        profiles = [Profile.model_validate(p) for p in doc["profiles"]]
    except (ValueError, KeyError, TypeError):
        return "forge profile gave no profile:\n" + "\n".join(output.strip().splitlines()[-15:])
    lines = [f"profile of kernel.py on the {doc.get('delivery', '?')} delivery:"]
    for p in profiles:
        lines.append(f"- {' x '.join(f'{k}={v}' for k, v in p.axes.items())}: {_metrics(p)}")
        if p.kernels:
            lines.append(f"  kernels: {kernels_line(p)}")
    timing = profiles[0].sources.get("median_ms", "") if profiles else ""
    if timing:
        lines.append(f"times: {timing}")
    notes = list(dict.fromkeys(n for p in profiles for n in p.notes))[:3]
    lines += [f"note: {n}" for n in notes]
    return "\n".join(lines)


def _metrics(p: Profile) -> str:
    m = dict(p.metrics)
    device_time = "cpu-interpret" not in p.sources.get("median_ms", "")
    if device_time and "sol_pct" not in m and _num(m.get("floor_ms")) and _num(m.get("median_ms")):
        m["sol_pct"] = 100.0 * m["floor_ms"] / m["median_ms"]
    return ", ".join(f"{k}={_fmt(m[k])}" for k in SHOWN if k in m) or "(no metrics)"


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)
