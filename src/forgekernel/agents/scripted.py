"""The scripted agent: replays a recorded sequence of edits (coder) and plans (architect).

Tests, demos and CI use it, and ``forge run --replay RUN_DIR`` replays a past run's agent
outputs without any LLM. A script is a TOML or JSON file::

    [[plan]]                          # architect plans, in order; the first is the initial plan
    file = "plan.toml"                # a curriculum TOML file (relative to the script), or
    # curriculum = { milestone = [...] }  the curriculum inline
    notes = "why"

    [[step]]                          # coder steps, in order: step i answers attempt i
    summary = "one program per row"
    row = "M0.1"                      # optional: only for this row (else the row is closed)
    files = { "kernel.py" = { file = "kernels/good.py" } }   # or inline text
    delete = ["old.py"]
    error = ""                        # non-empty: the agent fails with this message
    cost = { dollars = 0.0 }

The coder answers the attempt numbered ``len(ctx.history)``; the architect answers plan
number ``ctx.current.version`` (0 for the initial plan). Both are pure functions of what the
engine recorded, so a resumed run asks for exactly the step it had not finished.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from forgekernel import curriculum
from forgekernel.agents.base import (
    AgentError,
    ArchitectContext,
    ArchitectResult,
    CoderContext,
    CoderResult,
    NothingToTry,
)
from forgekernel.records import AgentCost, Curriculum

STEP_KEYS = {"summary", "row", "files", "delete", "error", "cost"}
PLAN_KEYS = {"file", "curriculum", "notes", "cost"}


@dataclass(frozen=True)
class Step:
    """One coder answer."""

    summary: str = ""
    row: str = ""
    files: tuple[tuple[str, str], ...] = ()
    delete: tuple[str, ...] = ()
    error: str = ""
    cost: AgentCost = AgentCost(agent="scripted")


@dataclass(frozen=True)
class Plan:
    """One architect answer."""

    curriculum: Curriculum
    notes: str = ""
    cost: AgentCost = AgentCost(agent="scripted")


@dataclass(frozen=True)
class Script:
    steps: tuple[Step, ...]
    plans: tuple[Plan, ...]
    source: str


def load_script(path: str | Path) -> Script:
    """Read a script file, or build one from a past run dir (a replay)."""
    p = Path(path)
    if (p / "run.toml").is_file() and (p / "ledger.jsonl").exists():
        return parse_script(script_from_run(p), p, f"replay of {p}")
    if not p.is_file():
        raise AgentError(f"{p}: no such script file (or run dir to replay)")
    try:
        raw = json.loads(p.read_text()) if p.suffix == ".json" else tomllib.loads(p.read_text())
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise AgentError(f"{p}: not a valid {'JSON' if p.suffix == '.json' else 'TOML'} script: {exc}") from None
    return parse_script(raw, p.parent, str(p))


def parse_script(raw: dict[str, Any], base: Path, source: str) -> Script:
    unknown = set(raw) - {"step", "plan"}
    if unknown:
        raise AgentError(f"{source}: unknown key '{sorted(unknown)[0]}'; a script has [[plan]] and [[step]]")
    steps = tuple(_step(s, base, f"{source}: step[{i}]") for i, s in enumerate(raw.get("step", [])))
    plans = tuple(_plan(p, base, f"{source}: plan[{i}]") for i, p in enumerate(raw.get("plan", [])))
    return Script(steps, plans, source)


def _cost(raw: Any, where: str) -> AgentCost:
    try:
        return AgentCost(**{"agent": "scripted", **(raw or {})})
    except (TypeError, ValueError) as exc:
        raise AgentError(f"{where}.cost: {exc}") from None


def _text(value: Any, base: Path, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and set(value) == {"file"}:
        path = base / value["file"]
        if not path.is_file():
            raise AgentError(f"{where}: {path} does not exist")
        return path.read_text()
    raise AgentError(f"{where}: a file's content is text or {{ file = PATH }}")


def _safe(rel: str, where: str) -> str:
    p = PurePosixPath(rel)
    if p.is_absolute() or ".." in p.parts or not p.parts or p.parts[0] == ".git":
        raise AgentError(f"{where}: '{rel}' is not a path inside the workspace")
    return str(p)


def _step(raw: Any, base: Path, where: str) -> Step:
    if not isinstance(raw, dict) or set(raw) - STEP_KEYS:
        raise AgentError(f"{where}: a step is a table with keys {', '.join(sorted(STEP_KEYS))}")
    files = tuple((_safe(k, where), _text(v, base, f"{where}.files.{k}"))
                  for k, v in (raw.get("files") or {}).items())
    return Step(summary=str(raw.get("summary", "")), row=str(raw.get("row", "")), files=files,
                delete=tuple(_safe(d, where) for d in raw.get("delete", [])),
                error=str(raw.get("error", "")), cost=_cost(raw.get("cost"), where))


def _plan(raw: Any, base: Path, where: str) -> Plan:
    if not isinstance(raw, dict):
        raise AgentError(f"{where}: a plan is a table")
    if "file" in raw:
        text = _text({"file": raw["file"]}, base, where)
        data = tomllib.loads(text)
    elif "curriculum" in raw:
        data = raw["curriculum"]
    else:
        data = {k: v for k, v in raw.items() if k not in PLAN_KEYS}
    try:
        cur = curriculum.from_dict(data)
    except curriculum.CurriculumError as exc:
        raise AgentError(f"{where}: {exc}".replace("\n", "; ")) from None
    return Plan(cur, notes=str(raw.get("notes", "")), cost=_cost(raw.get("cost"), where))


class ScriptedCoder:
    """Writes the files of step ``len(ctx.history)`` into the workspace."""

    name = "scripted"

    def __init__(self, script: Script) -> None:
        self.script = script

    def implement(self, ctx: CoderContext) -> CoderResult:
        i = len(ctx.history)
        if i >= len(self.script.steps):
            raise NothingToTry(f"the script ({self.script.source}) has no step {i}")
        step = self.script.steps[i]
        if step.row and step.row != ctx.row.id:
            raise NothingToTry(f"the script's step {i} is for row {step.row}, not {ctx.row.id}")
        if step.error:
            return CoderResult(summary=step.summary, cost=step.cost, error=step.error)
        for rel in step.delete:
            (ctx.workspace / rel).unlink(missing_ok=True)
        for rel, text in step.files:
            target = ctx.workspace / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        return CoderResult(summary=step.summary or f"script step {i}", cost=step.cost)


class ScriptedArchitect:
    """Returns plan ``ctx.current.version`` (0 first); the current plan once they run out."""

    name = "scripted"

    def __init__(self, script: Script) -> None:
        self.script = script

    def plan(self, ctx: ArchitectContext) -> ArchitectResult:
        i = 0 if ctx.current is None else ctx.current.version
        if i < len(self.script.plans):
            p = self.script.plans[i]
            return ArchitectResult(curriculum=p.curriculum, cost=p.cost, notes=p.notes)
        if ctx.current is None:
            raise AgentError(f"the script ({self.script.source}) has no plan")
        return ArchitectResult(curriculum=ctx.current, cost=AgentCost(agent=self.name),
                               notes="the script has no further plan")


def _need(script: str | Path | None) -> Script:
    if script is None:
        raise AgentError("the scripted agent needs --script PATH (a script file) or --replay RUN_DIR")
    return load_script(script)


def make_coder(settings: Any = None, *, script: str | Path | None = None, **_: Any) -> ScriptedCoder:
    return ScriptedCoder(_need(script))


def make_architect(settings: Any = None, *, script: str | Path | None = None,
                   **_: Any) -> ScriptedArchitect:
    return ScriptedArchitect(_need(script))


def script_from_run(run_dir: Path) -> dict[str, Any]:
    """A script replaying a past run's agent outputs: its plans and its coders' edits."""
    from forgekernel.records import Attempt, AttemptOutcome
    from forgekernel.run import ledger
    from forgekernel.run.rundir import RunDir, candidate_files

    rd = RunDir(Path(run_dir))
    steps: list[dict[str, Any]] = []
    plans: list[dict[str, Any]] = []
    started: dict[int, ledger.StartedEvent] = {}
    for ev in ledger.read(rd.ledger, rd.ledger_key())[0]:
        if isinstance(ev, ledger.PlanEvent):
            plans.append({"curriculum": ev.curriculum, "notes": ev.notes})
        elif isinstance(ev, ledger.StartedEvent):
            started[ev.seq] = ev
        elif isinstance(ev, Attempt):
            step: dict[str, Any] = {"row": ev.row, "cost": ev.agent.model_dump(exclude={"agent"})}
            src = rd.candidate_src(ev.candidate) if ev.candidate else None
            if src is not None and src.is_dir():
                step["files"] = {str(r): (src / r).read_text() for r in candidate_files(src)}
                step["summary"] = started[ev.seq].summary if ev.seq in started else ""
            else:
                step["error"] = (ev.detail if ev.outcome is AttemptOutcome.AGENT_ERROR else ev.error) or "no candidate recorded"
            steps.append(step)
    return {"plan": plans, "step": steps}
