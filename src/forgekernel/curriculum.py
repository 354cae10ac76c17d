"""The milestone curriculum: TOML in and out, validation, gates, freeze and revise. Pure.

File form (``curriculum.toml``)::

    version = 1
    reason = "initial plan"

    [[milestone]]
    id = "M0"
    kind = "architecture"
    title = "one fused pass per row"

    [[milestone.row]]
    id = "M0.1"
    decision = "one program per row, fp32 accumulation"
    lever = "9 launches -> 1"
    predict = "speedup >= 5"

    [milestone.gate]
    performance = "speedup >= 3"
    mechanism = ["launches == 1", "spills == 0"]
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import tomli_w
from pydantic import ValidationError

from forgekernel import exprs
from forgekernel.errors import ForgeError
from forgekernel.records import Curriculum, DecisionRow, Milestone, Profile, Verdict


class CurriculumError(ForgeError, ValueError):
    """An invalid curriculum; the message lists every problem, one per line."""


def loads(text: str) -> Curriculum:
    """Parse and validate curriculum TOML."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CurriculumError(f"not valid TOML: {exc}") from None
    return from_dict(raw)


def from_dict(raw: dict[str, Any]) -> Curriculum:
    raw = dict(raw)
    milestones = []
    for m in raw.pop("milestone", []):
        m = dict(m)
        m["rows"] = m.pop("row", [])
        milestones.append(m)
    raw["milestones"] = milestones
    try:
        cur = Curriculum.model_validate(raw)
    except ValidationError as exc:
        lines = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        raise CurriculumError("\n".join(lines)) from None
    problems = check(cur)
    if problems:
        raise CurriculumError("\n".join(problems))
    return cur


def check(cur: Curriculum) -> list[str]:
    """Structural problems: empty, duplicate ids, M0 not first/architecture, bad gate lines."""
    problems: list[str] = []
    if not cur.milestones:
        problems.append("the curriculum has no milestone")
    elif cur.milestones[0].kind != "architecture":
        problems.append(f"the first milestone ({cur.milestones[0].id}) must have kind = 'architecture'")
    seen: set[str] = set()
    for m in cur.milestones:
        for ident in (m.id, *(r.id for r in m.rows)):
            if ident in seen:
                problems.append(f"duplicate id '{ident}'")
            seen.add(ident)
        if not m.rows:
            problems.append(f"milestone {m.id} has no row")
        for line in (m.gate.performance, *m.gate.mechanism):
            if line:
                try:
                    exprs.parse(line)
                except exprs.ExprError as exc:
                    problems.append(f"milestone {m.id} gate: {exc}")
    return problems


def to_dict(cur: Curriculum) -> dict[str, Any]:
    out: dict[str, Any] = {"version": cur.version, "reason": cur.reason, "milestone": []}
    for m in cur.milestones:
        d = m.model_dump(mode="json", exclude={"rows", "gate"})
        d["row"] = [r.model_dump(mode="json", exclude_defaults=False) for r in m.rows]
        for r in d["row"]:
            if not r["params"]:
                del r["params"]
        d["gate"] = m.gate.model_dump(mode="json")
        out["milestone"].append(d)
    return out


def dumps(cur: Curriculum) -> str:
    return tomli_w.dumps(to_dict(cur))


def milestone(cur: Curriculum, ident: str) -> Milestone:
    for m in cur.milestones:
        if m.id == ident:
            return m
    raise KeyError(ident)


# ---------------------------------------------------------------- gates

VERDICT_METRICS = ("correct", "speedup", "min_speedup", "max_speedup", "noise_floor")
"""Verdict-level names a gate line may use (the same at every workload)."""

WORKLOAD_METRICS = ("median_ms", "reference_ms", "workload_speedup", "sol_pct", "max_rel_err")
"""Per-workload names taken from the verdict's visible workload results."""


@dataclass(frozen=True)
class LineResult:
    """One gate line and whether it holds: ``met``, ``not met`` or ``unknown``."""

    line: str
    kind: str
    state: str
    detail: str = ""


@dataclass(frozen=True)
class GateResult:
    """A milestone's gate evaluated against one verdict (and its profiles)."""

    milestone: str
    lines: tuple[LineResult, ...]

    @property
    def passed(self) -> bool:
        return all(r.state == "met" for r in self.lines)

    @property
    def unknown(self) -> tuple[LineResult, ...]:
        return tuple(r for r in self.lines if r.state == "unknown")


def gate_envs(verdict: Verdict | None, profiles: Sequence[Profile] = ()) -> list[dict[str, Any]]:
    """One name -> value map per measured workload (or a single one without workloads).

    Verdict-level names are in every map; per-workload verdict fields and Profile metrics
    are added at their workload. A metric nobody measured is absent, never zero.
    """
    base: dict[str, Any] = {"correct": bool(verdict and verdict.passed)}
    if verdict is None:
        return [base]
    timed = [w for w in verdict.workloads if not w.hidden and w.speedup is not None]
    if verdict.speedup is not None:
        base["speedup"] = verdict.speedup
    if timed:
        base["min_speedup"] = min(w.speedup for w in timed)
        base["max_speedup"] = max(w.speedup for w in timed)
    if verdict.noise_floor is not None:
        base["noise_floor"] = verdict.noise_floor
    base.update({k: v for k, v in verdict.profile.items() if _is_number(v)})
    envs: dict[tuple, dict[str, Any]] = {}
    for w in verdict.workloads:
        if w.hidden:
            continue
        env = envs.setdefault(_key(w.axes), dict(base))
        for name, value in (("median_ms", w.median_ms), ("reference_ms", w.reference_ms),
                            ("workload_speedup", w.speedup), ("sol_pct", w.sol_pct),
                            ("max_rel_err", w.max_rel_err)):
            if value is not None:
                env[name] = value
    for p in profiles:
        env = envs.setdefault(_key(p.axes), dict(base))
        for name, value in p.metrics.items():
            if _is_number(value):
                env.setdefault(name, value)
    return list(envs.values()) or [base]


def evaluate_line(line: str, envs: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """(state, detail): met when the line holds wherever its metrics were measured."""
    needed = exprs.names(line)
    usable = [e for e in envs if needed <= e.keys()]
    if not usable:
        missing = sorted(needed - set().union(*(e.keys() for e in envs)))
        return "unknown", f"not measured: {', '.join(missing) or ', '.join(sorted(needed))}"
    failing = [e for e in usable if not exprs.evaluate(line, e)]
    if failing:
        vals = ", ".join(f"{n}={_fmt(failing[0][n])}" for n in sorted(needed))
        return "not met", f"{vals} at {len(failing)} of {len(usable)} measured workload(s)"
    vals = ", ".join(f"{n}={_fmt(usable[0][n])}" for n in sorted(needed))
    return "met", vals


def evaluate_gate(m: Milestone, verdict: Verdict | None,
                  profiles: Sequence[Profile] = ()) -> GateResult:
    """Evaluate ``m``'s gate: correctness, the performance line and the mechanism lines."""
    envs = gate_envs(verdict, profiles)
    results: list[LineResult] = []
    if m.gate.correct:
        ok = bool(verdict and verdict.passed)
        detail = "" if ok else ("no correct candidate yet" if verdict is None else verdict.status.value)
        results.append(LineResult("correct", "correct", "met" if ok else "not met", detail))
    lines = [("performance", m.gate.performance)] if m.gate.performance else []
    lines += [("mechanism", line) for line in m.gate.mechanism]
    for kind, line in lines:
        state, detail = evaluate_line(line, envs)
        results.append(LineResult(line, kind, state, detail))
    return GateResult(m.id, tuple(results))


def _key(axes: Mapping[str, int]) -> tuple:
    return tuple(sorted(axes.items()))


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, str)


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


# ---------------------------------------------------------------- progress through the plan


def current_milestone(cur: Curriculum) -> Milestone | None:
    """The first milestone that is neither passed nor abandoned."""
    return next((m for m in cur.milestones if m.status == "open"), None)


def next_row(cur: Curriculum) -> tuple[Milestone, DecisionRow] | None:
    """The current milestone and its first open row, if any."""
    m = current_milestone(cur)
    if m is None:
        return None
    row = next((r for r in m.rows if r.status == "open"), None)
    return (m, row) if row is not None else None


def _replace_milestone(cur: Curriculum, new: Milestone) -> Curriculum:
    return cur.model_copy(update={"milestones": tuple(new if m.id == new.id else m
                                                       for m in cur.milestones)})


def mark_row(cur: Curriculum, row_id: str, status: str) -> Curriculum:
    """Set a row's status (done, failed, dropped, open); a frozen milestone is refused."""
    if status not in ("open", "done", "failed", "dropped"):
        raise CurriculumError(f"row status '{status}' is not one of open, done, failed, dropped")
    for m in cur.milestones:
        for r in m.rows:
            if r.id == row_id:
                if m.frozen:
                    raise CurriculumError(f"milestone {m.id} is frozen; only a revision may reopen it")
                rows = tuple(x.model_copy(update={"status": status}) if x.id == row_id else x
                             for x in m.rows)
                return _replace_milestone(cur, m.model_copy(update={"rows": rows}))
    raise CurriculumError(f"no row '{row_id}' in curriculum version {cur.version}")


def pass_milestone(cur: Curriculum, milestone_id: str) -> Curriculum:
    """Mark a milestone passed; an architecture milestone (M0) is frozen at the same time."""
    m = milestone(cur, milestone_id)
    return _replace_milestone(cur, m.model_copy(update={"status": "passed",
                                                        "frozen": m.kind == "architecture"}))


def advance(cur: Curriculum, gate: GateResult) -> Curriculum:
    """Pass the gated milestone when its gate passed; the next open milestone becomes current."""
    if not gate.passed:
        return cur
    return pass_milestone(cur, gate.milestone)


def _same_plan(a: Milestone, b: Milestone) -> bool:
    keep = {"id", "kind", "title", "gate"}
    rows = lambda m: [r.model_dump(exclude={"status"}) for r in m.rows]  # noqa: E731
    return a.model_dump(include=keep) == b.model_dump(include=keep) and rows(a) == rows(b)


def revise(old: Curriculum, new: Curriculum, reason: str) -> Curriculum:
    """The next version of the plan: ``new`` checked, numbered and reasoned.

    A frozen milestone (M0 after its gate passed) stays exactly as it was unless ``new``
    changes its decisions or gate: that reopens it, which is allowed only here and is
    written into the version's reason. Passed milestones the revision keeps unchanged stay
    passed.
    """
    if not reason.strip():
        raise CurriculumError("a revision needs a reason")
    problems = check(new)
    if problems:
        raise CurriculumError("\n".join(problems))
    before = {m.id: m for m in old.milestones}
    kept, reopened = [], []
    for m in new.milestones:
        prev = before.get(m.id)
        if prev is not None and prev.status == "passed" and _same_plan(prev, m):
            kept.append(prev)
            continue
        if prev is not None and prev.frozen:
            reopened.append(m.id)
        # Only a gate passes a milestone: the architect can keep one or abandon one.
        status = "abandoned" if m.status == "abandoned" else "open"
        kept.append(m.model_copy(update={"frozen": False, "status": status}))
    ids = {m.id for m in new.milestones}
    dropped = [m.id for m in old.milestones if m.frozen and m.id not in ids]
    note = "".join([f" (reopens frozen {', '.join(reopened)})" if reopened else "",
                    f" (drops frozen {', '.join(dropped)})" if dropped else ""])
    return new.model_copy(update={"version": old.version + 1, "reason": reason.strip() + note,
                                  "milestones": tuple(kept)})


def adds_work(old: Curriculum, new: Curriculum) -> bool:
    """Whether ``new`` plans anything ``old`` did not: a new or changed milestone or row, or
    one opened again. A version that only closes what was open (drops a row, abandons a
    milestone with no row left) adds nothing, and is not counted as a re-plan."""
    before = {m.id: m for m in old.milestones}
    for m in new.milestones:
        prev = before.get(m.id)
        if prev is None or not _same_plan(prev, m):
            return True
        if m.status == "open" and prev.status != "open":
            return True
        rows = {r.id: r.status for r in prev.rows}
        if any(r.status == "open" and rows[r.id] != "open" for r in m.rows):
            return True
    return False


def open_rows(cur: Curriculum) -> int:
    """Open rows left in milestones that are still open."""
    return sum(1 for m in cur.milestones if m.status == "open" for r in m.rows if r.status == "open")


def same_content(a: Curriculum, b: Curriculum) -> bool:
    """True when two versions plan the same thing (version and reason aside)."""
    return a.model_dump(exclude={"version", "reason"}) == b.model_dump(exclude={"version", "reason"})
