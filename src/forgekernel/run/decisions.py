"""What the run does next, decided from its state alone: :func:`decide`.

:func:`decide` is pure: it reads the :class:`~forgekernel.run.state.RunState` folded from
the ledger, the run's :class:`~forgekernel.run.state.Limits`, the session's
:class:`Flags` and the clock, and returns one decision. It runs nothing and records
nothing; :func:`forgekernel.run.engine.run` dispatches on the decision and
:class:`forgekernel.run.session.RunSession` carries out its effects.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from forgekernel import curriculum as C
from forgekernel.records import Attempt as AttemptRecord
from forgekernel.records import DecisionRow, Milestone
from forgekernel.run.state import Limits, RunState


@dataclass
class Flags:
    """What one session knows beyond the ledger (never stored; a resumed run starts empty)."""

    gate: C.GateResult | None = None
    """The current milestone's gate as last evaluated against the best."""
    nothing_left: str = ""
    """Why the architect has nothing more to plan (set when a plan fails): the run stops."""


@dataclass(frozen=True)
class JudgePending:
    """Started candidates wait for their verdicts: judge them before anything else."""


@dataclass(frozen=True)
class Confirm:
    """The best reaches the target by its own timing: re-judge it before stopping on it."""

    best: AttemptRecord


@dataclass(frozen=True)
class Stop:
    reason: str


@dataclass(frozen=True)
class Replan:
    why: str


@dataclass(frozen=True)
class Attempt:
    """Propose (a batch of) candidates for ``row`` of ``milestone``."""

    milestone: Milestone
    row: DecisionRow


Decision = JudgePending | Confirm | Stop | Replan | Attempt


def decide(state: RunState, limits: Limits, flags: Flags, now: datetime) -> Decision:
    """The next step of the loop, in order: pending judgements, the end of the run, a
    re-plan, the next open row."""
    if state.pending is not None:
        return JudgePending()
    if flags.nothing_left:
        return Stop(flags.nothing_left)
    best = state.best
    if best is not None and best.verdict and (best.verdict.speedup or 0) >= limits.target:
        done = [c for c in state.confirms if c.candidate == best.candidate]
        if not done:  # a lucky timing must not end the search
            return Confirm(best)
        if done[-1].met:  # one confirmation per best: a refuted one is not re-timed
            return Stop(f"target reached: {done[-1].verdict.speedup:.3g}x >= {limits.target:g}x, confirmed")
    if (reason := budget_spent(state, limits, now)) is not None:
        return Stop(reason)
    if (why := replan_reason(state, limits, flags)) is not None:
        if state.curriculum is None or state.replans < limits.max_replans:
            return Replan(why)
        if C.next_row(state.curriculum) is None:
            return Stop(f"nothing left to try ({why}; re-plan limit {limits.max_replans} reached)")
    target = C.next_row(state.curriculum)
    if target is None:
        return Stop("nothing left to try: every row is closed and no re-plan is left")
    return Attempt(*target)


def budget_spent(state: RunState, limits: Limits, now: datetime) -> str | None:
    """Why a budget (iterations, minutes, dollars, agent failures in a row) is spent."""
    if state.iterations >= limits.iterations:
        return f"iteration budget spent ({state.iterations} of {limits.iterations})"
    if state.minutes(now) >= limits.minutes:
        return f"time budget spent ({state.minutes(now):.1f} of {limits.minutes:g} minutes)"
    if state.dollars() > 0 and state.dollars() >= limits.dollars:
        return f"dollar budget spent (${state.dollars():.2f} of ${limits.dollars:.2f})"
    if state.trailing_agent_errors() >= 2 * limits.max_retries:
        last = state.attempts[state.last_seq].error if state.last_seq in state.attempts else ""
        return f"the agent failed {state.trailing_agent_errors()} times in a row ({last})"
    return None


def replan_reason(state: RunState, limits: Limits, flags: Flags) -> str | None:
    """Why the architect should plan (again), before the re-plan limit is applied."""
    cur = state.curriculum
    if cur is None:
        return "initial plan"
    m = C.current_milestone(cur)
    since_plan = sum(1 for q in state.attempts if q > state.plans[-1].after_seq)
    gate = flags.gate
    if m is None:
        return "every milestone passed but the target is not reached"
    if C.next_row(cur) is None:
        return f"the rows of {m.id} are exhausted without passing its gate"
    if gate is not None and gate.unknown and state.best is not None and since_plan:
        lines = "; ".join(f"'{r.line}' ({r.detail})" for r in gate.unknown)
        return f"gate impasse at {m.id}: {lines} cannot be measured here"
    if state.since_progress() >= limits.stall_after:
        return f"stall: no new best in {state.since_progress()} attempts"
    return None
