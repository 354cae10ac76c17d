"""Carry-over between self-evolution generations: what generation k leaves to generation k+1.

:func:`build` distils a finished generation's run state: its best (row, the coder's summary
of it, speedup over its own reference, noise floor), its M0 and how it ended, and per row
whether it paid off (produced a new best). The next generation's run dir keeps this as
``carry.json``; :class:`CarryArchitect` hands it to any architect as
``ArchitectContext.extra["evolve"]`` (every plan) and as text in ``reason`` (the initial
plan, so LLM architects read it in their prompt), then records in the new curriculum's
reason whether M0 was kept or revised.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from forgekernel.agents.base import ArchitectContext, ArchitectResult
from forgekernel.records import Curriculum, Verdict
from forgekernel.run.state import RunState


def _rows(state: RunState) -> list[dict[str, Any]]:
    decisions = {r.id: (m.id, r.decision, r.status)
                 for m in (state.curriculum.milestones if state.curriculum else ()) for r in m.rows}
    out: dict[str, dict[str, Any]] = {}
    for _, a in sorted(state.attempts.items()):
        if not a.row:
            continue
        ms, decision, status = decisions.get(a.row, (a.milestone, "", ""))
        row = out.setdefault(a.row, {"id": a.row, "milestone": ms, "decision": decision,
                                     "status": status, "attempts": 0, "passed": 0,
                                     "new_best": 0, "top_speedup": None})
        row["attempts"] += 1
        if a.accepted:
            row["passed"] += 1
        if a.best:
            row["new_best"] += 1
        x = a.verdict.speedup if a.verdict is not None and a.accepted else None
        if x is not None and (row["top_speedup"] is None or x > row["top_speedup"]):
            row["top_speedup"] = x
    return list(out.values())


def _m0(cur: Curriculum | None) -> dict[str, Any] | None:
    if cur is None or not cur.milestones:
        return None
    m = cur.milestones[0]
    return {"id": m.id, "title": m.title, "status": m.status, "frozen": m.frozen,
            "rows": [{"id": r.id, "decision": r.decision, "status": r.status, "params": r.params}
                     for r in m.rows]}


def build(state: RunState, generation: int, verdict: Verdict | None, timing: str) -> dict[str, Any]:
    """What generation ``generation`` (its final state and best's verdict) leaves to the next."""
    best = state.best
    rows = _rows(state)
    out: dict[str, Any] = {
        "from_generation": generation, "best": None, "m0": _m0(state.curriculum), "rows": rows,
        "paid_off": [r["id"] for r in rows if r["new_best"]],
        "plan_versions": len(state.plans), "stop": state.ends[-1].reason if state.ends else "",
    }
    if best is not None:
        started = state.started.get(best.seq)
        out["best"] = {"candidate": best.candidate, "seq": best.seq, "row": best.row,
                       "milestone": best.milestone, "summary": started.summary if started else "",
                       "data": started.data if started else {},
                       "speedup": verdict.speedup if verdict else None,
                       "noise_floor": verdict.noise_floor if verdict else None, "timing": timing}
    return out


def text(carried: dict[str, Any]) -> str:
    """The carry-over as one paragraph for an architect's prompt."""
    k = carried["from_generation"]
    best = carried.get("best") or {}
    x = f"{best['speedup']:.3g}x its own reference" if best.get("speedup") else "speedup unknown"
    parts = [f"self-evolution: this run is generation {k + 1}; the performance reference is "
             f"generation {k}'s best kernel {best.get('candidate', '?')} ({x}, "
             f"{best.get('timing', '?')} timings); correctness is still checked against the "
             "task's PyTorch reference in float64, so a candidate must beat that kernel"]
    m0 = carried.get("m0")
    if m0:
        parts.append(f"generation {k}'s M0 was '{m0['title']}' ({m0['status']}"
                     + (", frozen" if m0["frozen"] else "") + ")")
    if best.get("row"):
        parts.append(f"its best came from row {best['row']}: {best.get('summary', '')[:200]}")
    paid = carried.get("paid_off") or []
    rest = [r["id"] for r in carried.get("rows", ()) if r["id"] not in paid]
    parts.append("rows that paid off (new best): " + (", ".join(paid) or "none"))
    if rest:
        parts.append("rows without a new best: " + ", ".join(rest))
    parts.append("keep M0 if it still fits or revise it, and say why")
    return "; ".join(parts)


def m0_note(carried: dict[str, Any], cur: Curriculum) -> str:
    """Whether the new plan kept the previous generation's M0, in words."""
    old = (carried.get("m0") or {}).get("title")
    new = cur.milestones[0].title if cur.milestones else ""
    k = carried["from_generation"]
    if old is None:
        return f"generation {k} left no M0; new M0 '{new}'"
    if old == new:
        return f"kept M0 '{new}' from generation {k}"
    return f"revised M0 from generation {k}'s '{old}' to '{new}'"


class CarryArchitect:
    """Wraps an architect so that every plan sees the carried outcome (see module doc)."""

    def __init__(self, inner: Any, carried: dict[str, Any]) -> None:
        self.inner, self.carried = inner, carried
        self.name = inner.name

    def plan(self, ctx: ArchitectContext) -> ArchitectResult:
        initial = ctx.current is None
        reason = f"{ctx.reason} ({text(self.carried)})" if initial else ctx.reason
        ctx = dataclasses.replace(ctx, extra={**ctx.extra, "evolve": self.carried}, reason=reason)
        res = self.inner.plan(ctx)
        if not initial:
            return res
        note = m0_note(self.carried, res.curriculum)
        k = self.carried["from_generation"]
        why = f"{res.curriculum.reason} [evolve: generation {k + 1} starts from generation {k}'s outcome; {note}]"
        return dataclasses.replace(res, curriculum=res.curriculum.model_copy(update={"reason": why.strip()}),
                                   notes=f"{res.notes}\n{note}".strip())


def load_carry(path: Path) -> dict[str, Any] | None:
    """The carry-over saved in a run dir, or None when the run is not a later generation."""
    if not path.is_file():
        return None
    return json.loads(path.read_text())
