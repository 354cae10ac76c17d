"""Which knowledge-base entries apply to a task, ranked, and what an agent is told.

An entry applies through its op families (listed, or none listed = any family) and its
bottleneck classes, matched against the classes of the task's workloads: memory- or
compute-bound from the roofline floors (minimal bytes, flops from the task's formula or a
flop count of the reference on meta tensors, ceilings from certified entries), and
launch-bound when the floor is under ``LAUNCH_FLOOR_MS`` or a profile shows several launches.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from forgekernel.kb.ceilings import ceilings_for
from forgekernel.kb.claims import measured_text, state
from forgekernel.kb.entry import KBEntry
from forgekernel.kb.store import load_with_paths
from forgekernel.profile import roofline
from forgekernel.records import Profile, TaskSpec, Workload

DEFAULT_ARCH = "sm90"
"""Entries used for tasks whose arch is ``any``."""
LAUNCH_FLOOR_MS = 0.02
"""A workload whose roofline floor is below this is launch-sensitive (a launch costs µs)."""
STATE_BONUS = {"CERTIFIED": 0.3, "UNCERTIFIED": 0.0, "FAILED": -0.3, "UNSUPPORTED": -0.5}
"""Certification shifts an entry within its relevance tier; it never outranks relevance."""
BOUND_WEIGHT = 3.0


class Prescription(BaseModel):
    """An entry that applies to a task: its score (higher first) and why it applies."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    entry: KBEntry
    score: float
    why: str
    state: str
    relevant: bool
    """True when one of the entry's bottleneck classes occurs in the task."""
    floors: str = ""
    """Where the ceilings behind the task's roofline floors came from."""


def counted_flops(task: TaskSpec, module: Any, w: Workload) -> float | None:
    """Flops of the reference at ``w``: the [cost] formula, else PyTorch's flop counter on
    meta tensors (None when neither gives any)."""
    return roofline.workload_cost(task, module, w).flops


def workload_classes(task: TaskSpec, ceilings: roofline.Ceilings) -> list[set[str]]:
    """For each GPU workload (smoke ones when there are none): its bottleneck classes."""
    from forgekernel.task import check_reference_module

    module = check_reference_module(task)
    out = []
    for w in task.gpu_workloads() or task.workloads:
        cost = roofline.workload_cost(task, module, w)
        fl = roofline.floor(roofline.cost_bytes(task, w, cost), cost.flops, ceilings,
                            roofline.compute_dtype(task))
        classes = {fl.bound}
        if fl.floor_ms < LAUNCH_FLOOR_MS:
            classes.add("launch")
        out.append(classes)
    return out


def certified_ceilings(arch: str, entries: list[KBEntry] | None = None,
                       kb_dir: str | Path | None = None) -> roofline.Ceilings | None:
    """The ceilings the knowledge base has certified for ``arch`` (the first device with a
    certified large copy), or None."""
    if entries is None:
        entries = [e for e, _ in load_with_paths(arch, kb_dir)]
    devices = [e.certification.device for e in entries if e.probe == "copy_large" and e.certified]
    for device in dict.fromkeys(devices):
        found = ceilings_for(arch, device, kb_dir)
        if found is not None:
            return found
    return None


def _floors_ceilings(arch: str, entries: list[KBEntry], kb_dir: str | Path | None) -> roofline.Ceilings:
    return certified_ceilings(arch, entries, kb_dir) or roofline.H200_SHARED


def _launches(profiles: Sequence[Profile] | None) -> int:
    counts = [int(p.metrics["launches"]) for p in profiles or ()
              if isinstance(p.metrics.get("launches"), (int, float))]
    return max(counts, default=0)


def _score(entry: KBEntry, task: TaskSpec, share: dict[str, float],
           launches: int) -> tuple[float, float, list[str]] | None:
    """(score, bottleneck share, reasons), or None when the entry's families exclude the task."""
    if entry.families and task.family not in entry.families:
        if task.family != "other":
            return None
        fam, fam_why = 0.25, f"task family is 'other'; entry is for {', '.join(entry.families)}"
    elif entry.families:
        fam, fam_why = 1.0, f"family {task.family} is listed"
    else:
        fam, fam_why = 0.5, "applies to every family"
    bound, bound_why = 0.0, "none of its bottlenecks occurs in the task"
    for b in entry.bottlenecks:
        s = share.get(b, 0.0) if b != "occupancy" else 0.5 * share.get("memory", 0.0)
        if b == "launch" and launches > 1:
            s = max(s, 0.75)
        if s > bound:
            bound, bound_why = s, _bound_why(b, share, launches)
    return BOUND_WEIGHT * bound + fam + STATE_BONUS[state(entry)], bound, [fam_why, bound_why]


def _bound_why(b: str, share: dict[str, float], launches: int) -> str:
    if b == "launch" and launches > 1:
        return f"a profile shows {launches} launches per call"
    if b == "occupancy":
        return f"{share.get('memory', 0.0):.0%} of workloads memory-bound (occupancy matters there)"
    return f"{share.get(b, 0.0):.0%} of workloads {b}-bound"


def prescribe(task: TaskSpec, profiles: Sequence[Profile] | None = None, *,
              kb_dir: str | Path | None = None, arch: str | None = None) -> list[Prescription]:
    """Entries that apply to ``task``, best first (score, then id)."""
    arch = arch or (DEFAULT_ARCH if task.arch == "any" else task.arch)
    entries = [e for e, _ in load_with_paths(arch, kb_dir)]
    ceilings = _floors_ceilings(arch, entries, kb_dir)
    classes = workload_classes(task, ceilings)
    counts = Counter(c for cs in classes for c in cs)
    share = {c: n / len(classes) for c, n in counts.items()}
    launches = _launches(profiles)
    out = []
    for entry in entries:
        scored = _score(entry, task, share, launches)
        if scored is None:
            continue
        score, bound, whys = scored
        st = state(entry)
        whys.append(f"{st.lower()}" + (f" ({measured_text(entry)} on {entry.certification.device})"
                                       if entry.certification else ""))
        out.append(Prescription(entry=entry, score=round(score, 3), why="; ".join(whys), state=st,
                                relevant=bound > 0, floors=ceilings.source))
    return sorted(out, key=lambda p: (-p.score, p.entry.id))


def agent_sentence(entry: KBEntry) -> str:
    """One sentence: the prescription plus the certified measurement behind it."""
    cert = entry.certification
    text = entry.prescription.strip().rstrip(".")
    return (f"{text} (certified on {cert.device}, {cert.date[:10]}: measured "
            f"{measured_text(entry)}; claim: {entry.claim}).")


def prescriptions_for_agent(task: TaskSpec, profiles: Sequence[Profile] | None = None, *,
                            kb_dir: str | Path | None = None, role: str = "coder") -> tuple[str, ...]:
    """Certified, relevant facts for the agent in ``role`` (coder or architect), best first;
    never uncertified ones, never another role's."""
    return tuple(agent_sentence(p.entry) for p in prescribe(task, profiles, kb_dir=kb_dir)
                 if p.entry.certified and p.relevant and role in p.entry.roles)
