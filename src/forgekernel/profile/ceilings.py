"""Which device ceilings a floor is computed against, and where they came from.

Order: the knowledge base's certified ceilings for (arch, device) when it has them; the
H200 baseline (benchmarks/results/h200_baseline_2026-12-02.json) when the device is an H200 (or, with no device, when the
task targets sm90); a quick measurement in the worker on any other GPU; otherwise none.
``Ceilings.source`` always says which.
"""

from __future__ import annotations

from forgekernel.profile.roofline import H200_SHARED, Ceilings


def kb_ceilings(arch: str, device: str) -> Ceilings | None:
    """The knowledge base's ceilings for (arch, device), if the kb provides them."""
    try:
        from forgekernel.kb import ceilings_for
    except ImportError:
        return None
    found = ceilings_for(arch, device)
    if found is None:
        return None
    if not isinstance(found, Ceilings):
        found = Ceilings.model_validate(found.model_dump() if hasattr(found, "model_dump") else found)
    return found.model_copy(update={"source": f"knowledge base: {found.source or arch}"})


def resolve_ceilings(arch: str, device: str | None, on_gpu: bool) -> Ceilings | None:
    """Ceilings for a device (None = no device here: use the task's target arch)."""
    found = kb_ceilings(arch, device or "")
    if found is not None:
        return found
    if device and "H200" in device:
        return H200_SHARED
    if on_gpu and device:
        from forgekernel.profile.measure import measure_ceilings

        return measure_ceilings(device)
    if device is None and arch == "sm90":
        return H200_SHARED.model_copy(update={
            "source": f"{H200_SHARED.source}; no device here, floors are for the task's arch sm90"})
    return None
