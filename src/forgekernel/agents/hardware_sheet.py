"""The hardware sheet the agents get for a task's arch: the measured ceilings behind the
roofline floors and the fixed facts of the part."""

from __future__ import annotations

import functools
from typing import Any

HOPPER = {
    "sms": 132,
    "l2_mib": 50,
    "smem_per_sm_kib": 228,
    "smem_per_block_kib": 227,
    "registers_per_sm": 65536,
    "registers_per_thread": 255,
    "threads_per_block": 1024,
    "threads_per_sm": 2048,
    "warp": 32,
}
"""Fixed facts of the H200 (GH100, sm90). Source: NVIDIA's Hopper Tuning Guide (CUDA 12
documentation: 228 KiB shared memory per SM, at most 227 KiB per thread block, 64K 32-bit
registers per SM, at most 255 per thread, 1024 threads per block, 2048 per SM) and the
H200 datasheet / H100 whitepaper (132 SMs on the SXM part, 50 MiB L2)."""


@functools.lru_cache(maxsize=8)
def sheet_ceilings(arch: str) -> Any:
    """The ceilings behind the floors of ``arch`` (as kb.select picks them): the knowledge
    base's certified ones when it has them, else the shared H200 baseline; peaks the
    certified set lacks come from the baseline with its note. None off sm90."""
    from forgekernel.profile import roofline

    if arch != "sm90":
        return None
    try:
        from forgekernel.kb.select import certified_ceilings

        found = certified_ceilings(arch)
    except (OSError, ValueError, KeyError):  # a missing or damaged knowledge base: the baseline
        found = None
    if found is None:
        return roofline.H200_SHARED
    base = roofline.H200_SHARED
    if "H200" in found.device:
        missing = {k: v for k, v in base.tflops.items() if k not in found.tflops}
        found = found.model_copy(update={
            "tflops": {**found.tflops, **missing},
            "tflops_sources": {**found.tflops_sources,
                               **{k: base.tflops_sources.get(k, base.source) for k in missing}}})
    return found


def hardware_section(arch: str) -> str:
    """The device sheet of the task's arch: measured ceilings plus fixed Hopper facts."""
    sheet_arch = "sm90" if arch == "any" else arch
    c = sheet_ceilings(sheet_arch)
    if c is None:
        return "(no sheet for this arch)"
    h = HOPPER
    sizes = [m for m in (16, 64, 256) if m in c.bandwidth_by_mib]
    by_size = ", ".join(f"{m} MiB {c.bandwidth_by_mib[m]:.2f}" for m in sizes)
    peaks = []
    for dtype, tf in c.tflops.items():
        src = c.tflops_sources.get(dtype, "")
        note = " (datasheet lead, not measured)" if "datasheet" in src or "not measured" in src else ""
        peaks.append(f"{dtype} {tf:g}{note}")
    lines = [f"{c.device} ({sheet_arch}, Hopper)" + (" -- the judge's GPU" if arch == "any" else "") + ":",
             f"- copy bandwidth (large buffers, bytes read + written): {c.bandwidth_tbs:.2f} TB/s"
             + (f"; smaller buffers get less ({by_size} TB/s)" if by_size else ""),
             "- dense matrix peaks, TFLOP/s: " + ("; ".join(peaks) or "(none known)")]
    if c.launch_us:
        lines.append(f"- an eager launch costs about {c.launch_us:.1f} us")
    lines += [f"- {h['sms']} SMs; L2 {h['l2_mib']} MiB; shared memory {h['smem_per_sm_kib']} KiB per SM "
              f"({h['smem_per_block_kib']} KiB usable by one block)",
              f"- {h['registers_per_sm']} 32-bit registers per SM (at most {h['registers_per_thread']} "
              f"per thread); at most {h['threads_per_block']} threads per block, "
              f"{h['threads_per_sm']} per SM; warp of {h['warp']} threads",
              f"Ceilings: {c.source}."]
    return "\n".join(lines)
