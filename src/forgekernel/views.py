"""What the agents see of a run: history notes, the best's summary, profiles, gate state.

Hidden workloads never appear here (the judge adds them; the agents must not see them).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from forgekernel import curriculum as C
from forgekernel import rundir
from forgekernel.agents.base import AttemptNote
from forgekernel.records import Profile
from forgekernel.runstate import DUPLICATE, RunState


def history(state: RunState) -> tuple[AttemptNote, ...]:
    """One short note per recorded attempt, in order."""
    notes = []
    for q, a in sorted(state.attempts.items()):
        v = a.verdict
        started = state.started.get(q)
        summary = started.summary if started else a.error.splitlines()[0] if a.error else ""
        status = v.status.value if v else ("DUPLICATE" if a.error.startswith(DUPLICATE) else "ERROR")
        notes.append(AttemptNote(seq=q, row=a.row, status=status,
                                 speedup=v.speedup if v else None, summary=summary[:300]))
    return tuple(notes)


def proposed(state: RunState) -> tuple[AttemptNote, ...]:
    """Notes for candidates started but not yet judged (earlier proposals of a batch), so a
    coder proposes something else; status ``PROPOSED``. Empty outside batch mode."""
    return tuple(AttemptNote(seq=s.seq, row=s.row, status="PROPOSED", speedup=None, summary=s.summary[:300])
                 for s in state.waiting)


def best_summary(state: RunState) -> dict[str, Any] | None:
    """The best so far: speedup, noise floor, profile summary, visible workloads' timings."""
    best = state.best
    if best is None or best.verdict is None:
        return None
    v = best.verdict
    return {"candidate": best.candidate, "seq": best.seq, "row": best.row, "speedup": v.speedup,
            "noise_floor": v.noise_floor, "profile": dict(v.profile),
            "workloads": [{"axes": w.axes, "median_ms": w.median_ms, "reference_ms": w.reference_ms,
                           "speedup": w.speedup, "sol_pct": w.sol_pct, "timing": w.timing_label}
                          for w in v.workloads if not w.hidden]}


def reference_profiles(rd: rundir.RunDir) -> tuple[Profile, ...]:
    if not rd.reference.exists():
        return ()
    return tuple(Profile.model_validate(p) for p in rundir.read_json(rd.reference).get("profiles", []))


def best_profiles(rd: rundir.RunDir, state: RunState) -> list[dict[str, Any]]:
    """The best's profiles when a gate made the engine profile it (cached on disk)."""
    path = rd.candidate(state.best.candidate) / "profile.json" if state.best else None
    return rundir.read_json(path).get("profiles", []) if path and path.exists() else []


def architect_extra(rd: rundir.RunDir, state: RunState, gate: C.GateResult | None,
                    delivery: str, timing: str = "device") -> dict[str, Any]:
    """Extra facts for a re-plan: the delivery, the current gate, what can be measured here."""
    measurable = set().union(*(e.keys() for e in C.gate_envs(state.best.verdict if state.best else None)))
    return {"delivery": delivery, "timing": timing,
            "gate": [dataclasses.asdict(r) for r in gate.lines] if gate else [],
            "measurable": sorted(measurable),
            "best_profiles": best_profiles(rd, state),
            "floors": rundir.read_json(rd.reference).get("floors", []) if rd.reference.exists() else []}
