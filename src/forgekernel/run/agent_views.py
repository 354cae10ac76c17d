"""What the agents see of a run: history notes, the best's summary, profiles, gate state.

Hidden workloads never appear here (the judge adds them; the agents must not see them).
"""

from __future__ import annotations

import dataclasses
import difflib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from forgekernel import curriculum as C
from forgekernel.agents.base import AttemptNote
from forgekernel.agents.prompting import clean_summary
from forgekernel.errors import ForgeError
from forgekernel.records import Attempt, AttemptOutcome, Profile
from forgekernel.run import rundir
from forgekernel.run.state import RunState

RETRY_DIFF_LINES = 120
"""Lines of a retry's diff shown to the coder; a longer diff is cut with a note."""


def history(state: RunState) -> tuple[AttemptNote, ...]:
    """One short note per recorded attempt, in order."""
    notes = []
    for q, a in sorted(state.attempts.items()):
        v = a.verdict
        started = state.started.get(q)
        summary = started.summary if started else a.error.splitlines()[0] if a.error else ""
        summary = clean_summary(summary)
        status = v.status.value if v else ("DUPLICATE" if a.outcome is AttemptOutcome.DUPLICATE else "ERROR")
        notes.append(AttemptNote(seq=q, row=a.row, status=status,
                                 speedup=v.speedup if v else None, summary=summary[:300],
                                 data=started.data if started else {}))
    return tuple(notes)


def proposed(state: RunState) -> tuple[AttemptNote, ...]:
    """Notes for candidates started but not yet judged (earlier proposals of a batch), so a
    coder proposes something else; status ``PROPOSED``. Empty outside batch mode."""
    return tuple(AttemptNote(seq=s.seq, row=s.row, status="PROPOSED", speedup=None,
                             summary=clean_summary(s.summary)[:300], data=s.data)
                 for s in state.waiting)


def best_summary(state: RunState) -> dict[str, Any] | None:
    """The best so far: speedup (geometric mean), noise floor, launches per call, the
    visible workloads' timings. The judge's own bookkeeping (tolerances, phases, its
    sandbox, hidden-workload counts) stays out."""
    best = state.best
    if best is None or best.verdict is None:
        return None
    v = best.verdict
    launches = v.profile.get("launches")
    return {"candidate": best.candidate, "seq": best.seq, "row": best.row, "speedup": v.speedup,
            "noise_floor": v.noise_floor,
            "launches": launches if isinstance(launches, int) and not isinstance(launches, bool) else None,
            "workloads": [{"axes": w.axes, "median_ms": w.median_ms, "reference_ms": w.reference_ms,
                           "speedup": w.speedup, "sol_pct": w.sol_pct, "timing": w.timing_label}
                          for w in v.workloads if not w.hidden]}


def kernel_source(src: Path) -> str:
    """The text of ``src/kernel.py`` ('' when there is none)."""
    try:
        return (src / "kernel.py").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def best_source(rd: rundir.RunDir, state: RunState) -> str:
    """The best kernel's stored ``kernel.py`` ('' before there is a best)."""
    return kernel_source(rd.candidate_src(state.best.candidate)) if state.best else ""


def last_failed(state: RunState, row: str) -> Attempt | None:
    """The failed attempt a retry of ``row`` follows: among the row's tries since the last
    plan and after its last accepted one, the newest that stored a candidate; None on a
    first try or when the last try was accepted."""
    mark = state.plans[-1].after_seq if state.plans else 0
    tries = [a for q, a in sorted(state.attempts.items()) if q > mark and a.row == row]
    if not tries or tries[-1].accepted:
        return None
    for a in reversed(tries):
        if a.accepted:
            return None
        if a.candidate:
            return a
    return None


def retry_diff(rd: rundir.RunDir, state: RunState, row: str, current: str,
               limit: int = RETRY_DIFF_LINES) -> str:
    """A unified diff of the last failed attempt at ``row`` (its stored ``kernel.py``)
    against ``current``, at most ``limit`` lines; '' when this is no retry."""
    a = last_failed(state, row)
    if a is None:
        return ""
    tried = kernel_source(rd.candidate_src(a.candidate))
    if not tried:
        return ""
    lines = list(difflib.unified_diff(current.splitlines(), tried.splitlines(),
                                      "kernel.py (the kernel above)", f"kernel.py (attempt #{a.seq})",
                                      lineterm=""))
    if not lines:
        return f"(attempt #{a.seq} left kernel.py as it is; it changed other files only)"
    if len(lines) > limit:
        lines = [*lines[:limit], f"... ({len(lines) - limit} more diff lines cut)"]
    return "\n".join(lines)


def coder_sources(rd: rundir.RunDir, state: RunState, workspace: Path, row: str) -> tuple[str, str]:
    """What a coder's row starts from: the workspace's ``kernel.py`` (the best, or the stub)
    and, on a retry, the diff of the last failed attempt at ``row`` against it."""
    current = kernel_source(workspace)
    return current, retry_diff(rd, state, row, current)


def reference_profiles(rd: rundir.RunDir) -> tuple[Profile, ...]:
    if not rd.reference.exists():
        return ()
    return tuple(Profile.model_validate(p) for p in rundir.read_json(rd.reference).get("profiles", []))


def best_profiles(rd: rundir.RunDir, state: RunState) -> list[dict[str, Any]]:
    """The best's profiles when a gate made the engine profile it (cached on disk)."""
    path = rd.candidate(state.best.candidate) / "profile.json" if state.best else None
    return rundir.read_json(path).get("profiles", []) if path and path.exists() else []


def architect_extra(rd: rundir.RunDir, state: RunState, gate: C.GateResult | None,
                    delivery: str, timing: str = "device", budget: Any = None) -> dict[str, Any]:
    """Extra facts for a (re-)plan: the delivery, the current gate, what can be measured
    here, the roofline floors and speedup bounds, the budget left and the best's source.

    ``budget``: the run's limits (anything with ``iterations``, ``minutes`` and ``dollars``);
    run.toml's [budget] when not given."""
    measurable = set().union(*(e.keys() for e in C.gate_envs(state.best.verdict if state.best else None)))
    ref = rundir.read_json(rd.reference) if rd.reference.exists() else {}
    return {"delivery": delivery, "timing": timing,
            "gate": [dataclasses.asdict(r) for r in gate.lines] if gate else [],
            "gate_milestone": gate.milestone if gate else "",
            "measurable": sorted(measurable),
            "best_profiles": best_profiles(rd, state),
            "floors": ref.get("floors", []),
            "bounds": speedup_bounds(ref),
            "budget": budget_left(state, budget if budget is not None else run_budget(rd)),
            "best_source": best_source(rd, state)}


def _key(axes: dict[str, Any]) -> tuple:
    return tuple(sorted(axes.items()))


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def speedup_bounds(reference: dict[str, Any]) -> list[dict[str, Any]]:
    """Per workload of reference.json's floors: the reference's time (its profile, with the
    clock that timed it), the roofline floor, and their ratio, the most a kernel can gain
    there (only where the reference was timed on the device; None elsewhere)."""
    profiles = {_key(p.get("axes") or {}): p for p in reference.get("profiles") or []}
    out = []
    for f in reference.get("floors") or []:
        prof = profiles.get(_key(f.get("axes") or {})) or {}
        metrics = prof.get("metrics") or {}
        timing = str((prof.get("sources") or {}).get("median_ms", "")).split(":")[0].strip() or None
        ref_ms = _number(metrics.get("median_ms"))
        floor_ms = _number(metrics.get("floor_ms")) or _number(f.get("floor_ms"))
        bound = (ref_ms / floor_ms if timing == "device" and ref_ms and floor_ms else None)
        out.append({"axes": f.get("axes") or {}, "reference_ms": ref_ms, "timing": timing,
                    "floor_ms": floor_ms, "floor_bound": f.get("bound"), "bound": bound})
    return out


def run_budget(rd: rundir.RunDir) -> Any:
    """run.toml's [budget] (None without a readable run.toml)."""
    if not rd.run_toml.is_file():
        return None
    try:
        return rd.config.budget
    except ForgeError:
        return None


def budget_left(state: RunState, budget: Any, now: datetime | None = None) -> dict[str, Any] | None:
    """What the run has used of ``budget`` and its limits: iterations, minutes, dollars."""
    if budget is None:
        return None
    used = {"iterations": state.iterations, "minutes": state.minutes(now or datetime.now(UTC)),
            "dollars": state.dollars()}
    return {k: {"used": used[k], "limit": getattr(budget, k)} for k in used}
