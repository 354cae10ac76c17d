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
from typing import Any

import tomli_w
from pydantic import ValidationError

from forgekernel import exprs
from forgekernel.errors import ForgeError
from forgekernel.records import Curriculum, Milestone


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
