"""Roofline ceilings from certified knowledge-base entries."""

from __future__ import annotations

from pathlib import Path

from forgekernel.kb.entry import KBEntry
from forgekernel.kb.store import default_dir, load_with_paths
from forgekernel.profile.roofline import Ceilings

MATMUL_PROBES = {"matmul_bf16": "bfloat16", "matmul_fp16": "float16"}


def _certified_on(entries: list[KBEntry], probe: str, device: str) -> KBEntry | None:
    for e in entries:
        if e.probe == probe and e.certified and e.certification.device.strip().casefold() == device.strip().casefold():
            return e
    return None


def ceilings_for(arch: str, device: str, kb_dir: str | Path | None = None) -> Ceilings | None:
    """Ceilings for ``device`` from ``arch``'s certified entries, or None when not certified.

    Needs a certified ``copy_large`` entry measured on ``device`` (its size table gives the
    size-matched bandwidths); certified matmul entries on the same device add the matrix
    peaks, a certified ``launch_eager`` entry the launch cost. The built-in knowledge base
    missing (a non-editable install) also gives None; an explicit missing ``kb_dir`` is an error.
    """
    if kb_dir is None and not default_dir().is_dir():
        return None
    entries = [e for e, _ in load_with_paths(arch, kb_dir)]
    copy = _certified_on(entries, "copy_large", device)
    if copy is None:
        return None
    details = copy.certification.details
    by_mib = {int(k): float(v) for k, v in details["by_mib"].items()}
    tflops = {}
    for probe, dtype in MATMUL_PROBES.items():
        e = _certified_on(entries, probe, device)
        if e is not None:
            tflops[dtype] = e.certification.measured
    launch = _certified_on(entries, "launch_eager", device)
    return Ceilings(device=copy.certification.device, bandwidth_tbs=float(details["ceiling_tbs"]),
                    bandwidth_by_mib=by_mib, tflops=tflops,
                    launch_us=launch.certification.measured if launch else None,
                    source=f"hw_kb/{arch} ({copy.id} certified on {copy.certification.device}, "
                           f"{copy.certification.date})")
