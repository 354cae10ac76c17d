"""The state of a run, folded from its ledger: the same code builds it live and on resume.

:func:`replay` applies every ledger event in order; the engine appends an event and then
applies it with :meth:`RunState.apply`, so a resumed run and an uninterrupted one reach
the same state from the same lines.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from forgekernel import curriculum as cur_mod
from forgekernel.errors import ForgeError
from forgekernel.records import Attempt, AttemptOutcome, Curriculum
from forgekernel.run.ledger import (
    ConfirmEvent,
    EndEvent,
    Event,
    GateEvent,
    LedgerError,
    PlanEvent,
    RowEvent,
    SessionEvent,
    StartedEvent,
)
from forgekernel.run.runconfig import EngineKnobs, RunConfig


@dataclass(frozen=True)
class Limits:
    """When a run stops, and how the loop paces itself (run.toml, then CLI overrides)."""

    iterations: int
    minutes: float
    dollars: float
    target: float
    max_retries: int
    """Failed attempts on one row before it is closed."""
    stall_after: int
    """Attempts without a new best before the architect re-plans."""
    max_replans: int
    noise_floor: float
    """Relative gain a new best needs when the verdict carries no noise floor."""
    batch: int
    """Candidates the coder proposes per row before they are judged together."""

    @classmethod
    def from_config(cls, cfg: RunConfig, run_target: float, **overrides: Any) -> Limits:
        """run.toml's [budget] and [engine] (defaults applied when it was read), the run's
        target speedup, then ``overrides`` (None values ignored; ``target`` among them)."""
        values = {**dataclasses.asdict(cfg.budget), **dataclasses.asdict(cfg.engine),
                  "target": run_target}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


@dataclass
class RowCount:
    accepted: int = 0
    failed: int = 0


@dataclass
class RunState:
    """Everything the engine, `forge status` and the report need, from the ledger."""

    max_retries: int = EngineKnobs.max_retries
    attempts: dict[int, Attempt] = field(default_factory=dict)
    started: dict[int, StartedEvent] = field(default_factory=dict)
    plans: list[PlanEvent] = field(default_factory=list)
    gates: list[GateEvent] = field(default_factory=list)
    rows: list[RowEvent] = field(default_factory=list)
    sessions: list[SessionEvent] = field(default_factory=list)
    confirms: list[ConfirmEvent] = field(default_factory=list)
    ends: list[EndEvent] = field(default_factory=list)
    curriculum: Curriculum | None = None
    marks: list[PlanEvent | GateEvent] = field(default_factory=list)
    """Plans and gate passes in ledger order (what happened to the milestones)."""
    closing_only: set[int] = field(default_factory=set)
    """Versions that only closed what was open ("no change"): not counted as re-plans."""
    reopened: set[str] = field(default_factory=set)
    """Milestones the last plan reopened: only a best found after that plan can pass them."""
    best: Attempt | None = None
    counts: dict[str, RowCount] = field(default_factory=dict)
    closed_minutes: float = 0.0
    session_start: datetime | None = None
    last_time: datetime | None = None

    # -- folding
    def apply(self, ev: Event) -> None:
        t = datetime.fromisoformat(ev.time)
        if isinstance(ev, SessionEvent):
            self._close_session()
            self.session_start = t
            self.sessions.append(ev)
        elif isinstance(ev, Attempt):
            self._attempt(ev)
        elif isinstance(ev, StartedEvent):
            self.started[ev.seq] = ev
        elif isinstance(ev, PlanEvent):
            passed = {m.id for m in self.curriculum.milestones if m.status == "passed"} if self.curriculum else set()
            new = cur_mod.from_dict(ev.curriculum)
            if self.curriculum is not None and not cur_mod.adds_work(self.curriculum, new):
                self.closing_only.add(ev.version)
            self.plans.append(ev)
            self.marks.append(ev)
            self.curriculum = new
            self.reopened = {m.id for m in self.curriculum.milestones if m.status == "open"} & passed
            self.counts = {}
        elif isinstance(ev, RowEvent):
            self.rows.append(ev)
            self._set_row(ev.row, ev.status)
        elif isinstance(ev, GateEvent):
            self.gates.append(ev)
            self.marks.append(ev)
            if self.curriculum is not None:
                self.curriculum = cur_mod.pass_milestone(self.curriculum, ev.milestone)
        elif isinstance(ev, ConfirmEvent):
            self.confirms.append(ev)
        elif isinstance(ev, EndEvent):
            self.ends.append(ev)
        self.last_time = max(self.last_time or t, t)

    def _attempt(self, a: Attempt) -> None:
        self.attempts[a.seq] = a
        if a.best:
            self.best = a
        if self.curriculum is None or not a.row:
            return
        c = self.counts.setdefault(a.row, RowCount())
        if a.accepted:
            c.accepted += 1
        else:
            c.failed += 1
        row = self._row(a.row)
        if row is None or row.status != "open":
            return
        tries = int(row.params.get("tries", 1))
        if c.accepted >= tries:
            self._set_row(a.row, "done")
        elif c.failed >= self.max_retries:
            self._set_row(a.row, "done" if c.accepted else "failed")

    def _row(self, row_id: str):
        assert self.curriculum is not None
        return next((r for m in self.curriculum.milestones if m.status == "open"
                     for r in m.rows if r.id == row_id), None)

    def _set_row(self, row_id: str, status: str) -> None:
        if self.curriculum is not None and self._row(row_id) is not None:
            self.curriculum = cur_mod.mark_row(self.curriculum, row_id, status)

    def _close_session(self) -> None:
        if self.session_start is not None and self.last_time is not None:
            self.closed_minutes += max(0.0, (self.last_time - self.session_start).total_seconds() / 60)
        self.session_start = None

    # -- questions
    @property
    def pending(self) -> StartedEvent | None:
        """A candidate stored and started but never recorded: it must be judged (again)."""
        waiting = self.waiting
        return waiting[0] if waiting else None

    @property
    def waiting(self) -> list[StartedEvent]:
        """Every started but unrecorded candidate, by seq (a batch may leave several)."""
        return sorted((s for q, s in self.started.items() if q not in self.attempts), key=lambda s: s.seq)

    @property
    def last_seq(self) -> int:
        return max([0, *self.attempts, *self.started])

    @property
    def iterations(self) -> int:
        return len(set(self.attempts) | set(self.started))

    def dollars(self) -> float:
        spent = sum(a.agent.dollars for a in self.attempts.values())
        spent += sum(s.agent.dollars for q, s in self.started.items() if q not in self.attempts)
        spent += sum(e.agent.dollars for e in self.ends if e.agent is not None)
        return spent + sum(p.agent.dollars for p in self.plans)

    def minutes(self, now: datetime | None = None) -> float:
        """Wall minutes over all sessions (a killed session counts up to its last line)."""
        live = 0.0
        if self.session_start is not None:
            end = now or self.last_time or self.session_start
            live = max(0.0, (end - self.session_start).total_seconds() / 60)
        return self.closed_minutes + live

    @property
    def replans(self) -> int:
        """Re-plans that planned something new (a version that only closed rows or
        milestones does not use one up)."""
        return max(0, len(self.plans) - 1 - len(self.closing_only))

    def judged(self, cid: str) -> int | None:
        """The seq of an attempt that already judged candidate ``cid``."""
        return next((a.seq for a in self.attempts.values()
                     if a.candidate == cid and a.verdict is not None), None)

    def since_progress(self) -> int:
        """Attempts since the last new best or the last plan, whichever is later."""
        mark = max(self.best.seq if self.best else 0, self.plans[-1].after_seq if self.plans else 0)
        return sum(1 for q in self.attempts if q > mark)

    def trailing_agent_errors(self) -> int:
        n = 0
        for q in sorted(self.attempts, reverse=True):
            if self.attempts[q].outcome is not AttemptOutcome.AGENT_ERROR:
                break
            n += 1
        return n

    def last_feedback(self, row: str) -> tuple[str, int]:
        """Feedback of the last failed try on ``row`` since the last plan, and the retry count."""
        mark = self.plans[-1].after_seq if self.plans else 0
        tries = [a for q, a in sorted(self.attempts.items()) if q > mark and a.row == row]
        failed = [a for a in tries if not a.accepted]
        if not tries or tries[-1].accepted:
            return "", len(failed)
        last = tries[-1]
        text = last.verdict.feedback or last.verdict.reason if last.verdict else last.error
        return text, len(failed)


def replay(events: list[Event], max_retries: int = EngineKnobs.max_retries,
           where: str = "the ledger") -> RunState:
    """Fold a ledger into its state; an event that cannot be applied (a plan that is not a
    valid curriculum, a gate for a milestone that does not exist, ...) is one LedgerError
    naming its line (events are the ledger's lines in order)."""
    state = RunState(max_retries=max_retries)
    for n, ev in enumerate(events, 1):
        try:
            state.apply(ev)
        except (ForgeError, ValueError, KeyError, TypeError, AttributeError) as exc:
            kind = getattr(ev, "kind", "attempt")
            text = " ".join(str(exc).split())[:200] or type(exc).__name__
            raise LedgerError(f"{where}: line {n} ({kind}) does not fit the lines before it "
                              f"({text}); restore the file, or cut it before line {n}") from None
    return state
